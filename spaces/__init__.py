"""The Gradio Space (app.py) and the ``vilbias demo`` command."""
