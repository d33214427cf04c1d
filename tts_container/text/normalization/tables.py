"""What the English normalizer looks up around numbers and words: abbreviations, months, names, cues.

Plain data, no logic (units, currencies and magnitudes are in :mod:`.unit_tables`). Letters a person
spells are written as spaced capitals ("P M", "U S B"): misaki reads a lone capital as its letter name,
a lone small "a" as the article.
"""

from __future__ import annotations


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``: long word lists stay readable as prose."""
    return frozenset(text.split())


MONTHS: dict[str, str] = {
    "january": "January",
    "jan": "January",
    "february": "February",
    "feb": "February",
    "march": "March",
    "mar": "March",
    "april": "April",
    "apr": "April",
    "may": "May",
    "june": "June",
    "jun": "June",
    "july": "July",
    "jul": "July",
    "august": "August",
    "aug": "August",
    "september": "September",
    "sep": "September",
    "sept": "September",
    "october": "October",
    "oct": "October",
    "november": "November",
    "nov": "November",
    "december": "December",
    "dec": "December",
}
WEEKDAYS: dict[str, str] = {
    "Mon": "Monday",
    "Tue": "Tuesday",
    "Tues": "Tuesday",
    "Wed": "Wednesday",
    "Thu": "Thursday",
    "Thur": "Thursday",
    "Thurs": "Thursday",
    "Fri": "Friday",
    "Sat": "Saturday",
    "Sun": "Sunday",
}
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

# Abbreviations read the same wherever they stand ("e.g." is always "for example"), and "Mon." ...
ABBREVIATIONS: dict[str, str] = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Mr": "Mister",
    "Mrs": "Missus",
    "Ms": "Miz",
    "Mx.": "Mix",
    "Prof.": "Professor",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "Gov.": "Governor",
    "Sen.": "Senator",
    "Rep.": "Representative",
    "Pres.": "President",
    "Gen.": "General",
    "Capt.": "Captain",
    "Lt.": "Lieutenant",
    "Sgt.": "Sergeant",
    "Col.": "Colonel",
    "Rev.": "Reverend",
    "Hon.": "Honorable",
    "e.g.": "for example",
    "E.g.": "For example",
    "eg.": "for example",
    "i.e.": "that is",
    "I.e.": "That is",
    "ie.": "that is",
    "etc.": "et cetera",
    "vs.": "versus",
    "vs": "versus",
    "v.": "versus",
    "approx.": "approximately",
    "Approx.": "Approximately",
    "est.": "established",
    "Est.": "Established",
    "dept.": "department",
    "Dept.": "Department",
    "Ave.": "Avenue",
    "Blvd.": "Boulevard",
    "Rd.": "Road",
    "Ln.": "Lane",
    "Hwy.": "Highway",
    "Mt.": "Mount",
    "Ft.": "Fort",
    "Inc.": "Incorporated",
    "Ltd.": "Limited",
    "Corp.": "Corporation",
    "Co.": "Company",
    "Bros.": "Brothers",
    "Fig.": "Figure",
    "fig.": "figure",
    "Eq.": "Equation",
    "eq.": "equation",
    "Vol.": "Volume",
    "vol.": "volume",
    "Ch.": "Chapter",
    "ch.": "chapter",
    "pp.": "pages",
    "misc.": "miscellaneous",
    "avg.": "average",
    "max.": "maximum",
    "a.k.a.": "also known as",
    "aka": "also known as",
    "AKA": "also known as",
    "ext.": "extension",
    "Ctrl": "Control",
    "49ers": "Forty Niners",
    "76ers": "Seventy Sixers",
    "Cmd": "Command",
    "401(k)": "four oh one K",
    "401k": "four oh one K",
    "403(b)": "four oh three B",
    "457(b)": "four fifty seven B",
    "w/": "with",
    "w/o": "without",
    "b/c": "because",
    "et al.": "and others",
    "U.S.": "U S",
    "U.S.A.": "U S A",
    "U.K.": "U K",
    "E.U.": "E U",
    "U.N.": "U N",
    "Ph.D.": "P H D",
    "PhD": "P H D",
    "a.m.": "A M",
    "p.m.": "P M",
    "A.M.": "A M",
    "P.M.": "P M",
}
# Read by the words around them: before a name "Saint"/"Doctor", after a name "Street"/"Drive";
# (title, place, the reading when neither side says).
PLACE_OR_TITLE: dict[str, tuple[str, str, str]] = {
    "St.": ("Saint", "Street", "Street"),
    "St": ("Saint", "Street", "Street"),
    "Dr.": ("Doctor", "Drive", "Doctor"),
    "Dr": ("Doctor", "Drive", "Doctor"),
    "Ave": ("Ave", "Avenue", "Avenue"),  # "5th Ave" is an avenue; "Ave Maria" stays
    "Blvd": ("Blvd", "Boulevard", "Boulevard"),
}
# Before a number only: "No. 5", "p. 12", "Vol 3".
BEFORE_NUMBER: dict[str, str] = {
    "No.": "number",
    "no.": "number",
    "Nos.": "numbers",
    "No": "number",
    "p.": "page",
    "pg.": "page",
    "Pg.": "page",
    "Art.": "Article",
    "Sec.": "Section",
    "sec.": "section",
    "Ex.": "Example",
    "Rm.": "Room",
    "Apt.": "Apartment",
    "Apt": "Apartment",
    "Ste.": "Suite",
    "Ste": "Suite",
    "Bldg.": "Building",
    "Bldg": "Building",
    "Ep.": "Episode",
    "ep.": "episode",
    "Pt.": "Part",
    "ca.": "circa",
    "c.": "circa",
    "AD": "A D",
    "A.D.": "A D",
    "#": "number",
    "N°": "number",
    "Nº": "number",
    "№": "number",
}

# Words after which a Roman numeral counts ("Chapter IV" -> "Chapter four").
ROMAN_CUES = word_set(
    """chapter chapters part parts book books volume vol act scene section article title appendix
    phase stage level round episode season class type category series war world bowl psalm canto saturn
    grade tier mark mk schedule annex figure table unit lesson"""
)
# Names after which a Roman numeral is a regnal ordinal ("Louis XIV" -> "Louis the fourteenth").
REGNAL_NAMES = word_set(
    """Louis Henry Henri Elizabeth Charles George Edward William James Richard John Paul Pius Benedict
    Gregory Leo Peter Catherine Frederick Friedrich Philip Felipe Alexander Nicholas Ivan Ferdinand
    Isabella Victoria Mary Anne Napoleon Ramesses Ramses Carlos Juan Gustav Gustavus Olaf Harald
    Christian Wilhelm Otto Innocent Clement Urban Boniface Alfonso Sancho Selim Mehmed Constantine
    Justinian Rama Ludwig Karl Francis Franz Joseph Leopold Umberto Emmanuel David Robert Malcolm
    Kenneth Duncan Edmund Harold Stephen Matilda Sixtus Adrian Julius Martin Celestine Eugene Honorius
    Nicholas Pedro Manuel Sebastian Afonso Rudolf Albert Baldwin Amadeus Hussein Abdullah Faisal
    Akihito Naruhito Haakon Margrethe Willem Beatrix Cosimo Lorenzo Rainier Albert Casimir Sigismund
    Wladyslaw Mieszko Boleslaw Stanislaw Tutankhamun Thutmose Amenhotep Seti Ptolemy Cleopatra
    Antiochus Herod Darius Xerxes Cyrus Artaxerxes Tiglath Shalmaneser Sargon Nebuchadnezzar Pepin
    Lothair Childeric Clovis Dagobert Hugh Robert Canute Cnut Magnus Eric Erik Valdemar Sweyn"""
)

# Domain endings that are said as a word; the others are spelled ("io" -> "I O").
SAID_TLDS = frozenset({"com", "org", "net", "gov", "edu", "dev", "app", "info", "biz", "shop", "blog", "co"})
SPELLED_TLDS = word_set(
    """io ai uk us de fr jp cn ca au in eu nl se no ch es it ru br tv me ly gg sh ws xyz"""
)
# File extensions: said as a word ("json"), or spelled ("py" -> "P Y").
SAID_EXTENSIONS = word_set(
    """json yaml yml toml zip tar gz rar exe dmg bat ini cfg conf log lock wav tiff gif jpeg png
    docx xlsx pptx java rust html xml lua dart swift kotlin sass less vue"""
)
SPELLED_EXTENSIONS = word_set(
    """py md txt csv pdf js ts jsx tsx sh rs go rb cpp hpp cc c h css scss sql jpg svg bmp mp3 mp4 m4a
    flac ogg avi mov mkv doc xls ppt rtf odt ipynb pyc so dll dat bin db tf env cfg pkl npy npz tsv
    ps1 php pl kt scala r"""
)
SPOKEN_EXTENSIONS: dict[str, str] = {"png": "P N G", "gif": "gif", "jpeg": "J peg", "docx": "doc X"}

# Symbols a person reads out, where they stand between words or numbers.
SYMBOLS: dict[str, str] = {
    "&": "and",
    "+": "plus",
    "=": "equals",
    "×": "times",
    "÷": "divided by",
    "±": "plus or minus",
    "∓": "minus or plus",
    "~": "about",
    "≈": "approximately",
    "→": "to",
    "⟶": "to",
    "⇒": "implies",
    "←": "from",
    "↔": "to and from",
    "≠": "is not equal to",
    "≤": "is less than or equal to",
    "≥": "is greater than or equal to",
    "<": "is less than",
    ">": "is greater than",
    "∞": "infinity",
    "§": "section",
    "©": "copyright",
    "°": "degrees",
    "@": "at",
    "√": "the square root of",
    "π": "pi",
    "µ": "micro",
    "^": "to the power of",
    "/": "slash",
    "\\": "backslash",
    "|": "",
    "™": "",
    "®": "",
    "•": "",
    "·": "",
}
VULGAR_FRACTIONS: dict[str, tuple[int, int]] = {
    "½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5),
    "⅗": (3, 5), "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8),
    "⅞": (7, 8), "⅐": (1, 7), "⅑": (1, 9), "⅒": (1, 10),
}  # fmt: skip
SUPERSCRIPTS: dict[str, str] = {"²": "squared", "³": "cubed"}

# Software and product names after which "3.12" is a version ("three point twelve").
VERSION_CUES = word_set(
    """version versions v ver release rel update patch build firmware kernel python java node nodejs
    ruby perl php go golang rust swift kotlin scala typescript ecmascript es angular react vue django
    rails flask spring laravel ios ipados macos os android windows ubuntu debian fedora linux centos
    rhel chrome firefox safari edge gcc clang llvm cuda pytorch torch tensorflow numpy pandas gpt llama
    claude gemini mistral qwen phi bluetooth http tls ssl usb wifi wi-fi hdmi unicode unity unreal
    blender photoshop excel office minecraft sdk api protocol spec rfc pep"""
)
# Words after which a number is read digit by digit ("call 911", "flight 1234" is not here).
# A five-digit number after one of these is a ZIP code, said digit by digit ("NY 10118").
US_STATES = word_set(
    """AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC
    ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR"""
)
DIGIT_CUES = frozenset({"call", "dial", "phone", "tel", "telephone", "pin", "code", "extension", "ext"})
DIGIT_CUES |= {"emergency", "hotline", "helpline"}
# Words after which a three- or four-digit number is said in pairs ("flight three seventy", "room four
# oh four", "Boeing seven thirty seven").
PAIRED_CUES = word_set(
    """flight flights boeing airbus room rooms suite gate platform bus train apartment apt model channel
    terminal locker http error status rtx gtx"""
)
# Words before a four-digit number that make it a year.
YEAR_CUES = word_set(
    """in since by until till from during of year years circa c before after early late mid around
    summer winter spring autumn fall class season vintage"""
)
ERA_SUFFIXES: dict[str, str] = {
    "AD": "A D",
    "BC": "B C",
    "BCE": "B C E",
    "CE": "C E",
    "A.D.": "A D",
    "B.C.": "B C",
}
ABBREVIATIONS.update({f"{short}.": day for short, day in WEEKDAYS.items()})
# Capitalized words that mostly begin a sentence (after "etc." or "p.m." they say the period ended one).
SENTENCE_STARTERS = word_set(
    """The A An He She It We They I You This That These Those There Then But And So Or In On At For If
    When While What Why How Who Where My Our Your His Her Its Their After Before Now Today Yes No"""
)
