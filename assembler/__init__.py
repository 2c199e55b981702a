"""assembler: lands with its own issue; see DESIGN.md."""
