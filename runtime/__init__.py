"""runtime: a later stage (a task runtime driving executables); nothing here yet. See docs/architecture.md."""
