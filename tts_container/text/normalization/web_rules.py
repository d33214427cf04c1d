"""Rules for what is read out character by character: URLs, e-mail addresses, file names, paths, IP
addresses, phone numbers, @handles, #hashtags and dotted names in code (``os.path.join``).

A person reading "https://docs.python.org/3/" says "docs dot python dot org slash three": the scheme
is not said, dots are "dot", slashes "slash". Parts that are words stay words (misaki says them); short
letter clusters ("www", "io", "py") are spelled as capitals, which misaki reads as letter names.
"""

from __future__ import annotations

import re

from tts_container.text.normalization import context, numbers
from tts_container.text.normalization.scanner import Piece, Rule
from tts_container.text.normalization.tables import (
    DIGIT_CUES,
    SAID_EXTENSIONS,
    SAID_TLDS,
    SPELLED_EXTENSIONS,
    SPELLED_TLDS,
    SPOKEN_EXTENSIONS,
    word_set,
)

_TRAILING = ".,;:!?)]}\"'’”"
_SEPARATOR_WORDS = {".": "dot", "/": "slash", "-": "dash", "_": "underscore", "?": "question mark",
                    "=": "equals", "&": "and", "#": "hash", "+": "plus", "~": "tilde", ":": "colon",
                    "%": "percent", "@": "at", "\\": "backslash"}  # fmt: skip
_PARTS = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]")
_VOWELS = set("aeiouyAEIOUY")
# Short parts that are spelled even with a vowel in them ("api" -> "A P I"); others with a vowel are said.
_SPELLED_SHORT = word_set(
    """api css js sh npm io ai ui ux id os pc tv db sdk aws gcp cli img src tmp lib cd ls etc
    ftp ssh url uri xml rss ios iot ip"""
)


def _spell(letters: str) -> str:
    return " ".join(letters.upper())


def _label(part: str) -> str:
    """One run of letters or digits inside a URL, path or name, as said."""
    if part.isdecimal():
        return numbers.cardinal(part) if len(part) <= 4 and not part.startswith("0") else numbers.digits(part)
    if part.lower() in SAID_TLDS:
        return part
    short = len(part) == 1 or (len(part) <= 3 and part.isupper())
    if short or part.lower() in _SPELLED_SHORT or not (_VOWELS & set(part)):
        return _spell(part)
    return part


def spell_out(text: str, *, tld: bool = False) -> str:
    """ "user_name-2.example" as "user underscore name dash two dot example"; ``tld``: the last label
    is a domain ending ("com" said, "io" spelled)."""
    parts = _PARTS.findall(text)
    said: list[str] = []
    last_word = max((i for i, p in enumerate(parts) if p.isalnum()), default=-1)
    tld = tld and "." in text  # "localhost" has no domain ending
    for index, part in enumerate(parts):
        if part.isalnum():
            if tld and index == last_word and part.isalpha():
                said.append(part if part.lower() in SAID_TLDS else _spell(part))
            else:
                said.append(_label(part))
        elif part in _SEPARATOR_WORDS:
            said.append(_SEPARATOR_WORDS[part])
    return " ".join(said)


def _trimmed(match: re.Match[str]) -> tuple[int, int]:
    end = match.end()
    while end > match.start() and match.string[end - 1] in _TRAILING:
        end -= 1
    return match.start(), end


_TLD = "|".join(sorted(SAID_TLDS | SPELLED_TLDS, key=len, reverse=True))
_EMAIL = re.compile(r"(?<![\w.+\-])(?P<user>[\w.+\-]+)@(?P<host>[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)")
_URL = re.compile(
    rf"(?<![\w@/.])(?:(?P<scheme>https?://|ftp://)(?P<rest>\S+)|(?P<bare>(?:www\.)?(?:[A-Za-z0-9\-]+\.)+"
    rf"(?:{_TLD})(?![\w\-])(?:[/:?#]\S*)?))"
)


def _email(match: re.Match[str], british: bool) -> list[Piece]:
    said = f"{spell_out(match['user'])} at {spell_out(match['host'], tld=True)}"
    return [Piece(match.start(), match.end(), said)]


def _url(match: re.Match[str], british: bool) -> list[Piece] | None:
    start, end = _trimmed(match)
    body = match.string[start:end]
    if match["scheme"]:
        body = body[len(match["scheme"]) :]
    body = body.rstrip("/")
    host, slash, path = body.partition("/")
    host, colon, port = host.partition(":")
    if not host:
        return None
    said = spell_out(host, tld=True)
    if colon and port.isdecimal():
        said += " colon " + numbers.digits(port)
    if slash and path:
        said += " slash " + spell_out(path)
    return [Piece(start, end, said)]


_EXTENSION = "|".join(sorted(SAID_EXTENSIONS | SPELLED_EXTENSIONS, key=len, reverse=True))
_FILE = re.compile(rf"(?<![\w.\-/])(?P<name>[\w\-]+(?:\.[\w\-]+)*)?\.(?P<ext>{_EXTENSION})(?![\w\-]|\.\w)")
_PATH = re.compile(
    rf"(?<![\w/.])(?P<path>(?:~|\.\.?)?/(?:[\w.\-]+/)*[\w.\-]*[\w\-]/?|(?:[\w.\-]+/)+[\w\-]+\.(?:{_EXTENSION}))(?![\w/])"
)


_WINDOWS_PATH = re.compile(r"(?<![\w\\])(?P<path>[A-Za-z]:\\(?:[\w.\-]+\\)*(?:[\w.\-]*[\w\-])?)(?![\w\\])")
_HEX = re.compile(r"(?<![\w.])0x(?P<digits>[0-9A-Fa-f]+)(?![\w])")


def _windows_path(match: re.Match[str], british: bool) -> list[Piece]:
    """ "C:\\Users\\Public": C colon backslash Users backslash Public."""
    return [Piece(match.start(), match.end(), spell_out(match["path"]))]


def _hex(match: re.Match[str], british: bool) -> list[Piece]:
    """ "0x80070005", an error code: zero x, then each digit (letters spelled)."""
    said = " ".join(numbers.digits(c) if c.isdecimal() else c.upper() for c in match["digits"])
    return [Piece(match.start(), match.end(), f"zero x {said}")]


# "os.path.join", "self.value", "np.array()": parts of two characters or more, and (so that "Mr.Smith"
# without its space stays prose) a lower-case first part, a third part, or a call.
_DOTTED_NAME = re.compile(
    r"(?<![\w.@/\-])(?P<name>[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+)(?P<call>\(\))?(?![\w@\-(]|\.\w)"
)


def _dotted_name(match: re.Match[str], british: bool) -> list[Piece] | None:
    """A name in code, as a programmer reads it aloud: "O S dot path dot join" (the call's "()" unsaid)."""
    name = match["name"]
    if not (name[0].islower() or name[0] == "_" or name.count(".") >= 2 or match["call"]):
        return None
    return [Piece(match.start(), match.end(), spell_out(name))]


def _extension(ext: str) -> str:
    if ext in SPOKEN_EXTENSIONS:
        return SPOKEN_EXTENSIONS[ext]
    return ext if ext in SAID_EXTENSIONS else _spell(ext)


def _file(match: re.Match[str], british: bool) -> list[Piece] | None:
    name, ext = match["name"], match["ext"]
    if name is None:  # ".cpp files"
        return [Piece(match.start(), match.end(), f"dot {_extension(ext)}")]
    if name[0].isdecimal() and name.replace(".", "").isdecimal():
        return None  # "3.5" before a unit or "1.py"-like numbers are not file names
    if ext == "js" and name[0].isupper() and "." not in name:
        return [Piece(match.start(), match.end(), f"{name} J S")]  # Node.js, Vue.js
    said = f"{spell_out(name)} dot {_extension(ext)}"
    return [Piece(match.start(), match.end(), said)]


def _path(match: re.Match[str], british: bool) -> list[Piece] | None:
    path = match["path"]
    relative = not path.startswith(("/", "~", "."))  # "scripts/build.sh": ends in a file name
    if path.count("/") < 2 and not path.startswith(("~", ".")) and not relative:
        return None  # "/s" or "km/h"-like: not a path
    folders, dot, ext = path.rstrip("/").rpartition(".")
    if (
        dot
        and "/" not in ext
        and ext in SAID_EXTENSIONS | SPELLED_EXTENSIONS
        and folders[-1:] not in ("/", "")
    ):
        said = f"{spell_out(folders)} dot {_extension(ext)}"  # ".../main.py": the file's ending as in names
    else:
        said = spell_out(path.rstrip("/"))
    return [Piece(match.start(), match.end(), said.replace("tilde slash", "home slash"))]


_IP = re.compile(
    r"(?<![\w.])(?P<ip>(?:\d{1,3}\.){3}\d{1,3})(?::(?P<port>\d{1,5})|/(?P<prefix>\d{1,2}))?(?![\w]|\.\d)"
)


def _ip(match: re.Match[str], british: bool) -> list[Piece] | None:
    octets = match["ip"].split(".")
    if any(int(o) > 255 for o in octets):
        return None
    said = " dot ".join(numbers.digits(o) for o in octets)
    if match["port"]:
        said += " colon " + numbers.digits(match["port"])
    if match["prefix"]:  # a network: "10.0.0.0/8" is ten dot zero dot zero dot zero slash eight
        said += " slash " + numbers.cardinal(match["prefix"])
    return [Piece(match.start(), match.end(), said)]


_PHONE = re.compile(
    r"(?<![\w+.\-/])(?P<cc>\+\d{1,3}[ .\-]?|1[ .\-]?(?=\())?(?P<area>\(\d{1,4}\)[ .\-]?)?"
    r"(?P<groups>(?:\d{1,4}[ .\-]){1,3}\d{4}|\d{3}[ .\-]\d{4}|0\d{3,4}[ .\-]\d{6,7})(?![\w]|[.\-]\d)"
)


# "+33 1 23 45 67 89": a country code, then groups of any size.
_PHONE_INTERNATIONAL = re.compile(
    r"(?<![\w+.\-/])(?P<cc>\+\d{1,3})(?P<area>)(?P<groups>(?:[ .\-]\(?\d{1,4}\)?){2,6})(?![\w]|[.\-]\d)"
)


def _phone(match: re.Match[str], british: bool) -> list[Piece] | None:
    text = match.group(0)
    groups = [g for g in re.split(r"[ .\-]", match["groups"].strip(" .-")) if g]
    separators = set(re.findall(r"[ .\-]", match["groups"]))
    digit_count = sum(c.isdecimal() for c in text)
    if not 7 <= digit_count <= 15:
        return None
    before = context.word_before(match.string, match.start()).lower().rstrip(":.")
    cued = bool(match["cc"] or match["area"]) or before in DIGIT_CUES | _PHONE_CUES
    # "020 7946 0958", "07700 900123": a number with its trunk zero
    trunk = groups[0].startswith("0") and (len(groups) >= 3 or len(groups[0]) >= 4 <= len(groups[1]))
    if not cued and not trunk:
        if separators == {" "} and [len(g) for g in groups] != [3, 3, 4]:
            return None
        if len(groups[0]) == 4 and len(groups) == 2:
            return None  # "1990-1995" and other ranges of four-digit numbers
        if "." in separators and len(groups) < 3:
            return None
    pieces: list[Piece] = []
    written = list(re.finditer(r"\S+", text))
    said_before: list[str] = []  # the groups so far, as written
    for index, word in enumerate(written):
        parts = [g for g in re.split(r"[.\-]", word.group(0)) if g]
        spoken = []
        for group in parts:
            spoken.append(_phone_group(group, area=said_before in ([], ["1"], ["+1"])))
            said_before.append(group.strip("()"))
        said = ", ".join(spoken)
        start = match.start() + word.start()
        comma = "," if index < len(written) - 1 else ""  # a pause between the groups, as a person makes
        pieces.append(Piece(start, start + len(word.group(0)), said + comma))
    return pieces


_TOLL_FREE = re.compile(r"\(?(?P<digit>[2-9])00\)?")
# "1-800-FLOWERS", "1-888-GOT-JUNK": a toll-free number dialled by its letters; the word is said as a word.
_VANITY = re.compile(
    r"(?<![\w+.\-/])(?P<one>1[ .\-])?(?P<area>[2-9]00|8[3-8]{2})[ .\-]"
    r"(?P<word>[A-Z]{2,}(?:-[A-Z]+)*)(?![\w\-])"
)


def _vanity(match: re.Match[str], british: bool) -> list[Piece] | None:
    if len(match["word"].replace("-", "")) < 4:
        return None
    said = ("one, " if match["one"] else "") + _phone_group(match["area"], area=True) + ", "
    said += match["word"].replace("-", " ").lower()
    return [Piece(match.start(), match.end(), said)]


def _phone_group(group: str, *, area: bool = False) -> str:
    """A group digit by digit; an area code like 800 as Americans say it ("one eight hundred")."""
    if area and (toll_free := _TOLL_FREE.fullmatch(group)):
        return numbers.digits(toll_free["digit"]) + " hundred"
    said = numbers.digits(group)
    return ("plus " + said) if group.startswith("+") else said


_PHONE_CUES = frozenset({"at", "number", "on", "or", "mobile", "cell", "fax", "whatsapp", "hotline", "line"})
_HANDLE = re.compile(r"(?<![\w@.])@(?P<handle>[A-Za-z_]\w*)")
_HASHTAG = re.compile(r"(?<![\w#&])#(?:(?P<number>\d+)(?![\w])|(?P<tag>[A-Za-z]\w*))")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _handle(match: re.Match[str], british: bool) -> list[Piece]:
    return [Piece(match.start(), match.end(), "at " + spell_out(match["handle"]))]


def _hashtag(match: re.Match[str], british: bool) -> list[Piece]:
    if match["number"]:
        return [Piece(match.start(), match.end(), "number " + numbers.cardinal(match["number"]))]
    words = " ".join(_tag_word(part) for part in _CAMEL.findall(match["tag"])) or match["tag"]
    if context.word_before(match.string, match.start()).lower() in ("hashtag", "hashtags"):
        return [Piece(match.start(), match.end(), words)]  # "use the hashtag #TravelTips"
    return [Piece(match.start(), match.end(), "hashtag " + words)]


def _tag_word(part: str) -> str:
    """A word of a hashtag: digits as a number ("#covid19": "covid nineteen"), a long run digit by digit."""
    if not part.isdecimal():
        return part
    return numbers.cardinal(part) if len(part) <= 4 else numbers.digits(part)


RULES = (
    Rule("email", _EMAIL, _email),
    Rule("url", _URL, _url),
    Rule("ip", _IP, _ip),
    Rule("file", _FILE, _file),
    Rule("path", _PATH, _path),
    Rule("windows_path", _WINDOWS_PATH, _windows_path),
    Rule("hex", _HEX, _hex),
    Rule("dotted_name", _DOTTED_NAME, _dotted_name),
    Rule("handle", _HANDLE, _handle),
    Rule("hashtag", _HASHTAG, _hashtag),
)
# After the dates: "31-12-2023" is a date, not a number to dial.
PHONE_RULES = (
    Rule("vanity_phone", _VANITY, _vanity),
    Rule("phone_international", _PHONE_INTERNATIONAL, _phone),
    Rule("phone", _PHONE, _phone),
)
