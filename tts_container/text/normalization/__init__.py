"""English text normalization for speech: the parts behind :mod:`tts_container.text.normalization.normalizer`.

``numbers`` says numbers in words, ``tables`` holds what is looked up (units, currencies, abbreviations,
months, names), ``context`` reads the words around a match, ``rules`` finds what needs saying differently
and ``scanner`` applies the rules to a sentence. Only :mod:`tts_container.text.normalization.normalizer` is
public.
"""
