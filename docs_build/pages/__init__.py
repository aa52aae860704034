"""Pages: one URL scheme (``urls.py``) and the Markdown of every generated page, in a language."""
