"""Text shared by the language models' generators: reference_models/text/language.py's invented language pair."""
