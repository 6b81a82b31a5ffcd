"""The public declarations of Sonde's headers and their Doxygen comments.

A small parser for the subset of C and C++ that include/sonde/ uses: macros, typedefs, structs
and their fields, enums and their values, exported and static inline functions, and the public
and protected members of the classes of the C++ helper headers. It keeps the comment that
documents each declaration (a `/** ... */` block before it or a `/**< ... */` after it), so that
the checks can read tags such as `@since` from it.

parse_header(text) returns a list of Decl. A Decl has a kind ("macro", "typedef", "struct",
"enum", "function", "inline", "class", "member", "field", "enumerator"), a name (a field is
"struct.field", an enumerator its own name, a class member "class::member"), the parent Decl
for fields, enumerators and members, the documenting comments, the line, and for functions
whether they are exported (SONDE_API).
"""
import re

SINCE_RE = re.compile(r"@since\s+(\d+)\.(\d+)\b")

# Identifiers that bracket declarations and are not statements of their own.
BRACKETS = {"SONDE_BEGIN_DECLS", "SONDE_END_DECLS"}


class Decl:
    def __init__(self, kind, name, line, parent=None):
        self.kind = kind
        self.name = name
        self.line = line
        self.parent = parent
        self.docs = []
        self.doc_spans = []
        self.exported = False
        self.tag = None

    def add_doc(self, tok):
        self.docs.append(tok.text)
        self.doc_spans.append((tok.start, tok.end))

    def since(self):
        """The (major, minor) of the first @since in the documenting comments, or None."""
        for doc in self.docs:
            m = SINCE_RE.search(doc)
            if m:
                return (int(m.group(1)), int(m.group(2)))
        return None

    def all_since(self):
        return [(int(a), int(b)) for doc in self.docs for a, b in SINCE_RE.findall(doc)]

    def __repr__(self):
        return "Decl(%s %s:%d)" % (self.kind, self.name, self.line)


class Tok:
    __slots__ = ("kind", "text", "line", "start", "end")

    def __init__(self, kind, text, line, start=0, end=0):
        self.kind = kind  # id num str punct doc trail pp
        self.text = text  # for doc and trail: the comment without its delimiters
        self.line = line
        self.start = start  # offsets of the whole token (comment delimiters included)
        self.end = end


def _pp_trailing_docs(tok):
    return [Tok("trail", m.group(1), tok.line, tok.start + m.start(), tok.start + m.end())
            for m in re.finditer(r"/\*\*<(.*?)\*/", tok.text, re.S)]


def tokenize(text):
    toks = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and at_line_start:
            j = i
            start = line
            while j < n:
                if text[j] == "\n":
                    if text[j - 1] == "\\":
                        line += 1
                        j += 1
                        continue
                    break
                if text.startswith("/*", j):  # a comment may span lines inside a directive
                    k = text.find("*/", j + 2)
                    k = n if k < 0 else k + 2
                    line += text.count("\n", j, k)
                    j = k
                    continue
                j += 1
            toks.append(Tok("pp", text[i:j], start, i, j))
            i = j
            continue
        at_line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            body = text[i:j]
            if body.startswith("/**<"):
                toks.append(Tok("trail", body[4:-2], line, i, j))
            elif body.startswith("/**") and body != "/**/":
                toks.append(Tok("doc", body[3:-2], line, i, j))
            line += body.count("\n")
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            body = text[i:j]
            if body.startswith("///<"):
                toks.append(Tok("trail", body[4:], line, i, j))
            elif body.startswith("///"):
                toks.append(Tok("doc", body[3:], line, i, j))
            i = j
            continue
        if c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            toks.append(Tok("id", text[i:j], line))
            i = j
            continue
        if c.isdigit():
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "._"):
                j += 1
            toks.append(Tok("num", text[i:j], line))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            toks.append(Tok("str", text[i:j + 1], line))
            i = j + 1
            continue
        if text.startswith("::", i):
            toks.append(Tok("punct", "::", line))
            i += 2
            continue
        toks.append(Tok("punct", c, line))
        i += 1
    return toks


def _group(toks, i):
    """toks[i] is an opening bracket: the index just past its match."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[toks[i].text]]
    j = i + 1
    while j < len(toks) and stack:
        t = toks[j]
        if t.kind == "punct":
            if t.text in pairs:
                stack.append(pairs[t.text])
            elif t.text == stack[-1]:
                stack.pop()
        j += 1
    return j


def _is_doc_comment(doc):
    return "@file" not in doc and "\\file" not in doc


def _declarator_name(code):
    """The name a declaration (a list of non-comment tokens, without `;`) declares."""
    for k in range(len(code) - 2):
        if code[k].text == "(" and code[k + 1].text == "*" and code[k + 2].kind == "id":
            return code[k + 2].text  # function pointer: (*name)(...)
    depth = 0
    last = None
    for t in code:
        if t.kind == "punct" and t.text in "([{":
            if depth == 0 and t.text == "(" and last is not None:
                return last  # function: name(...)
            depth += 1
        elif t.kind == "punct" and t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.kind == "id":
            last = t.text
        elif depth == 0 and t.kind == "punct" and t.text in "=:":
            break
    return last


class _Parser:
    def __init__(self, toks):
        self.toks = toks
        self.decls = []
        self.by_key = {}
        self.last_top = None

    def add(self, kind, name, line, parent=None, docs=()):
        key = (kind, name)
        d = self.by_key.get(key)
        if d is None:
            d = Decl(kind, name, line, parent)
            self.by_key[key] = d
            self.decls.append(d)
        for tok in docs:
            d.add_doc(tok)
        return d

    def run(self):
        self.scope(0, len(self.toks), prefix="")
        return self.decls

    def scope(self, i, end, prefix):
        """A file or namespace scope."""
        pending = []
        guard = None
        stmt = []
        while i < end:
            t = self.toks[i]
            if t.kind == "pp":
                body = t.text
                m = re.match(r"#\s*(\w+)\s*(\w*)", body)
                directive, arg = (m.group(1), m.group(2)) if m else ("", "")
                if directive == "ifndef":
                    guard = arg
                elif directive == "define" and arg and arg != guard:
                    docs = [d for d in pending if _is_doc_comment(d.text)] + _pp_trailing_docs(t)
                    self.last_top = self.add("macro", arg, t.line, docs=docs)
                    pending = []
                elif directive in ("include", "define"):
                    pending = []
                i += 1
                continue
            if t.kind == "doc":
                if not stmt:
                    pending = [t] if _is_doc_comment(t.text) else []
                else:
                    pending.append(t)
                i += 1
                continue
            if t.kind == "trail":
                if self.last_top is not None:
                    self.last_top.add_doc(t)
                i += 1
                continue
            if t.kind == "id" and t.text in BRACKETS and not stmt:
                i += 1
                continue
            if t.kind == "id" and t.text == "namespace" and not stmt:
                j = i + 1
                name = ""
                while self.toks[j].text != "{":
                    name += self.toks[j].text
                    j += 1
                close = _group(self.toks, j)
                self.scope(j + 1, close - 1, prefix + name + "::")
                pending = []
                i = close
                continue
            if t.kind == "punct" and t.text == "{":
                close = _group(self.toks, i)
                stmt.append(("group", i, close))
                i = close
                code = [x for x in stmt if not isinstance(x, tuple)]
                if self._is_function_definition(code):
                    self.last_top = self.statement(stmt, pending, prefix)
                    stmt, pending = [], []
                continue
            if t.kind == "punct" and t.text == ";":
                self.last_top = self.statement(stmt, pending, prefix)
                stmt, pending = [], []
                i += 1
                continue
            stmt.append(t)
            i += 1

    @staticmethod
    def _is_function_definition(code):
        depth = 0
        saw_call = False
        for t in code:
            if t.kind == "punct" and t.text == "(":
                if depth == 0:
                    saw_call = True
                depth += 1
            elif t.kind == "punct" and t.text == ")":
                depth -= 1
            elif depth == 0 and t.text in ("=", "struct", "enum", "class", "typedef", "union"):
                return False
        return saw_call

    def statement(self, stmt, pending, prefix):
        """Records the declaration of one top-level statement and returns it (or None)."""
        code = [x for x in stmt if not isinstance(x, tuple) and x.kind != "doc"]
        groups = [x for x in stmt if isinstance(x, tuple)]
        if not code:
            return None
        words = [t.text for t in code if t.kind == "id"]
        line = code[0].line
        docs = list(pending)
        if words and words[0] == "template":
            return None
        if "class" in words[:1] or (words[:1] == ["struct"] and groups):
            name = prefix + code[1].text
            d = self.add("class" if words[0] == "class" else "struct", name, line, docs=docs)
            if groups:
                g = groups[0]
                self.members(g[1] + 1, g[2] - 1, d, words[0] == "class")
            return d
        if words and words[0] == "enum" and groups:
            tag = code[1].text if len(code) > 1 and code[1].kind == "id" else None
            g = groups[0]
            first = self._first_enumerator(g[1] + 1, g[2] - 1)
            d = self.add("enum", tag or ("<enum %s>" % first), line, docs=docs)
            d.tag = tag
            self.enumerators(g[1] + 1, g[2] - 1, d)
            return d
        if words and words[0] == "typedef":
            name = _declarator_name(code)
            is_struct = len(code) > 1 and code[1].text in ("struct", "union")
            d = self.add("typedef", prefix + name, line, docs=docs)
            if is_struct and groups:
                d.kind = "struct"
                d.tag = code[2].text if len(code) > 2 and code[2].kind == "id" else None
                g = groups[0]
                self.members(g[1] + 1, g[2] - 1, d, False)
            return d
        name = _declarator_name(code)
        if name is None:
            return None
        if groups and "inline" in words:
            return self.add("inline", prefix + name, line, docs=docs)
        d = self.add("function", prefix + name, line, docs=docs)
        d.exported = d.exported or "SONDE_API" in words
        return d

    def _first_enumerator(self, i, end):
        for t in self.toks[i:end]:
            if t.kind == "id":
                return t.text
        return "?"

    def enumerators(self, i, end, enum):
        pending = []
        cur = []
        last = None
        while i < end:
            t = self.toks[i]
            if t.kind == "doc":
                pending.append(t)
            elif t.kind == "trail":
                target = self._finish_enumerator(cur, pending, enum) if cur else last
                if cur:
                    cur, pending, last = [], [], target
                if target is not None:
                    target.add_doc(t)
            elif t.kind == "punct" and t.text == ",":
                last = self._finish_enumerator(cur, pending, enum)
                cur, pending = [], []
            elif t.kind != "pp":
                cur.append(t)
            i += 1
        if cur:
            self._finish_enumerator(cur, pending, enum)

    def _finish_enumerator(self, cur, pending, enum):
        if not cur or cur[0].kind != "id":
            return None
        return self.add("enumerator", cur[0].text, cur[0].line, parent=enum, docs=pending)

    def members(self, i, end, owner, is_class):
        """Fields of a struct, or the public and protected members of a class."""
        access = "private" if is_class else "public"
        pending = []
        stmt = []
        last = None
        while i < end:
            t = self.toks[i]
            if t.kind == "doc":
                if stmt:
                    pending.append(t)
                else:
                    pending = [t]
                i += 1
                continue
            if t.kind == "trail":
                target = last
                if stmt:
                    target = None  # documents the member being declared; attached at its end
                    pending.append(t)
                if target is not None:
                    target.add_doc(t)
                i += 1
                continue
            if (not stmt and t.kind == "id" and t.text in ("public", "protected", "private")
                    and self.toks[i + 1].text == ":"):
                access = t.text
                pending = []
                i += 2
                continue
            if t.kind == "punct" and t.text == "{":
                close = _group(self.toks, i)
                code = [x for x in stmt if not isinstance(x, tuple)]
                stmt.append(("group", i, close))
                i = close
                if self._is_function_definition(code):
                    last = self.member(stmt, pending, owner, access, is_class)
                    stmt, pending = [], []
                continue
            if t.kind == "punct" and t.text == ";":
                last = self.member(stmt, pending, owner, access, is_class)
                stmt, pending = [], []
                i += 1
                continue
            if t.kind != "pp":
                stmt.append(t)
            i += 1

    def member(self, stmt, pending, owner, access, is_class):
        code = [x for x in stmt if not isinstance(x, tuple)]
        if not code or access == "private":
            return None
        words = [t.text for t in code if t.kind == "id"]
        if words[:1] == ["template"] or words[:1] == ["friend"]:
            return None
        if words[:1] == ["struct"] and any(isinstance(x, tuple) for x in stmt):
            return None  # a nested type; none is public today
        name = _declarator_name(code)
        if name is None:
            return None
        if is_class:
            for k in range(len(code) - 1):
                if code[k].text == "~" and code[k + 1].kind == "id":
                    name = "~" + code[k + 1].text
            return self.add("member", owner.name + "::" + name, code[0].line, parent=owner,
                            docs=pending)
        return self.add("field", owner.name + "." + name, code[0].line, parent=owner,
                        docs=pending)


def parse_header(text):
    """The declarations of one header, in order."""
    return _Parser(tokenize(text)).run()


def parse_map(text):
    """{function name: (major, minor)} of a version script."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    nodes = {}
    for major, minor, body in re.findall(r"SONDE_(\d+)\.(\d+)\s*\{(.*?)\}", text, re.S):
        names = body.split("local:")[0].replace("global:", "")
        for name in re.findall(r"([A-Za-z_]\w*)\s*;", names):
            nodes[name] = (int(major), int(minor))
    return nodes
