"""Stage `aggregate`: fold results into a summary (`fold`), its statistics (`stats`) and the CI gate (`gate`)."""
