"""The table model and its renderers (Markdown, LaTeX, terminal) and the page pieces: standard library only."""
