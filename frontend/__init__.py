"""frontend: a later stage (tensor code compiled to PTO kernels); nothing here yet. See docs/architecture.md."""
