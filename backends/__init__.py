"""backends: lands with its own issue; see DESIGN.md."""
