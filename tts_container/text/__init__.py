"""Text as the model says it: normalization, pronunciation, grapheme-to-phoneme per language, what is
speakable."""
