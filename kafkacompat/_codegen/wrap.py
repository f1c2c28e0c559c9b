"""Keep generated source within the project's line limit.

The renderers write one statement per line; a statement longer than the limit
(a signature with twenty keyword arguments, a version table, a long error
message) is rewrapped here the way a formatter would: the first bracket whose
contents can be split gets one item per line, a string too long for its line
becomes adjacent literals, and the pieces are wrapped again until they fit.
Only whitespace and implicit string concatenation change, so the compiled code
is the same.  A line that cannot be split (a long name, a comment) is left as
it is.
"""

from __future__ import annotations

import io
import itertools
import tokenize

__all__ = ["LINE_LIMIT", "wrap_source"]

#: The project's line length (pyproject's ruff ``line-length``).
LINE_LIMIT = 110

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = set(_OPEN.values())


def wrap_source(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` with every over-long single-line statement wrapped."""
    lines = text.split("\n")
    if all(len(line) <= limit for line in lines):
        return text
    single = _single_line_statements(text)
    out: list[str] = []
    for number, line in enumerate(lines, 1):
        if len(line) > limit and number in single:
            out.extend(_wrap(line, limit))
        else:
            out.append(line)
    return "\n".join(out)


def _single_line_statements(text: str) -> set[int]:
    """Line numbers holding a whole statement (no multi-line string or bracket)."""
    result: set[int] = set()
    start_row = None
    spans_lines = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            if token.type == tokenize.NL and start_row is not None:
                spans_lines = True
            continue
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if start_row is not None and not spans_lines:
                result.add(start_row)
            start_row, spans_lines = None, False
            continue
        if start_row is None:
            start_row = token.start[0]
        if token.end[0] != start_row:
            spans_lines = True
    return result


def _tokens(line: str) -> list[tokenize.TokenInfo] | None:
    try:
        return [
            t
            for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


def _wrap(line: str, limit: int) -> list[str]:
    if len(line) <= limit:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    body = line.strip()
    tokens = _tokens(line)
    if tokens is None:
        return [line]
    split = None
    splitters = (_split_conditional, _split_brackets, _split_import, _split_annotation, _split_assignment)
    for splitter in splitters:
        split = splitter(body, tokens, indent)
        if split is not None:
            break
    if split is None:
        split = _split_string(body, tokens, indent, limit)
    if split is None:
        return [line]
    return [piece for part in split for piece in _wrap(part, limit)]


def _split_brackets(body: str, tokens: list[tokenize.TokenInfo], indent: str) -> list[str] | None:
    """One item per line inside the first bracket that holds something to split."""
    for i, token in enumerate(tokens):
        if token.type != tokenize.OP or token.string not in _OPEN:
            continue
        previous = tokens[i - 1] if i else None
        call_like = previous is not None and (
            (previous.type == tokenize.NAME and previous.string not in _KEYWORDS) or previous.string in _CLOSE
        )
        if token.string == "[" and call_like:
            continue  # a subscript: "a[x]" must not become "a[x,]"
        close, commas = _match(tokens, i)
        if close is None or close == i + 1:
            continue
        starts = [token.end[1], *(tokens[c].end[1] for c in commas)]
        ends = [*(tokens[c].start[1] for c in commas), tokens[close].start[1]]
        items = [body[a:b].strip() for a, b in zip(starts, ends, strict=True)]
        trailing = items[-1] == ""
        if trailing:
            items.pop()
        # A lone item in plain parentheses is a grouping: a comma would make it a tuple.
        if len(items) == 1 and not trailing and not (token.string == "(" and call_like):
            continue
        inner = indent + "    "
        return [
            indent + body[: token.end[1]],
            *(f"{inner}{item}," for item in items),
            indent + body[tokens[close].start[1] :],
        ]
    return None


def _top_level(tokens: list[tokenize.TokenInfo]) -> list[int]:
    """Indexes of the tokens outside every bracket."""
    depth = 0
    found = []
    for j, token in enumerate(tokens):
        text = token.string if token.type == tokenize.OP else ""
        if text in _CLOSE:
            depth -= 1
        elif depth == 0:
            found.append(j)
        if text in _OPEN:
            depth += 1
    return found


def _assignment_at(tokens: list[tokenize.TokenInfo]) -> int | None:
    """The index of a statement's top-level ``=``, if it is an assignment."""
    for j in _top_level(tokens):
        if tokens[j].type == tokenize.OP and tokens[j].string == "=":
            return j
    return None


def _parenthesised_tail(body: str, tokens: list[tokenize.TokenInfo], at: int, indent: str) -> list[str]:
    start = tokens[at + 1].start[1]
    return [f"{indent}{body[:start]}(", f"{indent}    {body[start:]}", f"{indent})"]


def _split_assignment(body: str, tokens: list[tokenize.TokenInfo], indent: str) -> list[str] | None:
    """``target = value`` as ``target = (`` value ``)``."""
    at = _assignment_at(tokens)
    if at is None or at + 1 >= len(tokens) or tokens[0].string in ("def", "class"):
        return None
    return _parenthesised_tail(body, tokens, at, indent)


def _split_conditional(body: str, tokens: list[tokenize.TokenInfo], indent: str) -> list[str] | None:
    """An assignment of a conditional expression: parenthesised before anything inside it is split."""
    at = _assignment_at(tokens)
    if at is None or tokens[0].string in ("def", "class"):
        return None
    level = [j for j in _top_level(tokens) if j > at and tokens[j].type == tokenize.NAME]
    if_at = next((j for j in level if tokens[j].string == "if"), None)
    else_at = next((j for j in level if tokens[j].string == "else" and j > (if_at or 0)), None)
    if if_at is None or else_at is None:
        return None
    cuts = [tokens[at + 1].start[1], tokens[if_at].start[1], tokens[else_at].start[1], len(body)]
    parts = [body[a:b].strip() for a, b in itertools.pairwise(cuts)]
    return [f"{indent}{body[: cuts[0]]}(", *(f"{indent}    {part}" for part in parts), f"{indent})"]


def _split_import(body: str, tokens: list[tokenize.TokenInfo], indent: str) -> list[str] | None:
    """``from a import b, c`` as a parenthesised list."""
    if tokens[0].string != "from" or any(t.string == "(" for t in tokens):
        return None
    at = next((j for j, t in enumerate(tokens) if t.type == tokenize.NAME and t.string == "import"), None)
    if at is None:
        return None
    names = [name.strip() for name in body[tokens[at].end[1] :].split(",")]
    return [f"{indent}{body[: tokens[at].end[1]]} (", *(f"{indent}    {n}," for n in names), f"{indent})"]


def _split_annotation(body: str, tokens: list[tokenize.TokenInfo], indent: str) -> list[str] | None:
    """A parameter ``name: annotation = default,`` with its annotation parenthesised."""
    if len(tokens) < 3 or tokens[0].type != tokenize.NAME or tokens[1].string != ":":
        return None
    level = _top_level(tokens)
    stop = next((j for j in level if j > 1 and tokens[j].string in ("=", ",")), len(tokens))
    if stop <= 2:
        return None
    end = tokens[stop].start[1] if stop < len(tokens) else len(body)
    head = body[: tokens[2].start[1]]
    annotation = body[tokens[2].start[1] : end].strip()
    return [f"{indent}{head}(", f"{indent}    {annotation}", f"{indent}){body[end:]}"]


_KEYWORDS = {"in", "not", "and", "or", "is", "if", "else", "return", "yield", "lambda", "for", "await"}


def _match(tokens: list[tokenize.TokenInfo], open_index: int) -> tuple[int | None, list[int]]:
    """The index of the bracket closing ``tokens[open_index]`` and of its top-level commas."""
    depth = 0
    commas: list[int] = []
    for j in range(open_index, len(tokens)):
        text = tokens[j].string if tokens[j].type == tokenize.OP else ""
        if text in _OPEN:
            depth += 1
        elif text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j, commas
        elif text == "," and depth == 1:
            commas.append(j)
    return None, commas


def _split_string(body: str, tokens: list[tokenize.TokenInfo], indent: str, limit: int) -> list[str] | None:
    """A line that is one string literal (and perhaps a comma): adjacent literals at spaces."""
    if not tokens or tokens[0].type != tokenize.STRING:
        return None
    if len(tokens) > 2 or (len(tokens) == 2 and tokens[1].string != ","):
        return None
    literal = tokens[0].string
    quote_at = next(k for k, ch in enumerate(literal) if ch in "'\"")
    prefix, quote = literal[:quote_at], literal[quote_at]
    if literal[quote_at : quote_at + 3] == quote * 3 or "b" in prefix.lower():
        return None
    content = literal[quote_at + 1 : -1]
    room = limit - len(indent) - len(prefix) - 2 - 1
    pieces = _cut(content, room, formatted="f" in prefix.lower())
    if len(pieces) < 2:
        return None
    suffix = body[tokens[0].end[1] :]
    plain = prefix.replace("f", "").replace("F", "")  # a piece with no placeholder needs no f
    lines = [
        f"{indent}{prefix if '{' in piece or '}' in piece else plain}{quote}{piece}{quote}"
        for piece in pieces
    ]
    lines[-1] += suffix
    return lines


def _cut(content: str, room: int, *, formatted: bool) -> list[str]:
    """``content`` cut after spaces (outside ``{...}`` in f-strings) into pieces of at most ``room``."""
    cuts: list[int] = []
    depth = 0
    for k, ch in enumerate(content):
        if formatted and ch == "{":
            depth += 1
        elif formatted and ch == "}":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0 and (k == 0 or content[k - 1] != "\\"):
            cuts.append(k + 1)
    pieces: list[str] = []
    start = 0
    last = None
    for cut in [*cuts, len(content)]:
        if cut - start > room and last is not None and last > start:
            pieces.append(content[start:last])
            start = last
        last = cut
    pieces.append(content[start:])
    return [piece for piece in pieces if piece]
