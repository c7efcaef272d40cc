"""The table model and its renderers (Markdown, LaTeX, terminal), the page pieces, and the words of the site's
generated pages: what the report and the site render, never a statistic of its own."""
