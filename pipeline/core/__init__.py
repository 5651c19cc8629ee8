"""What every part speaks: records, the run config, errors, the format and metric registries."""
