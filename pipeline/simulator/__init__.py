"""The judge simulator: a loopback HTTP server speaking the OpenAI and Anthropic protocols."""
