"""An example package beside the configs: a custom input adapter (`examples/custom_adapter.yaml`)."""
