"""Mutation testing for whos_online: does breaking a line make a test fail?

    python3 dev.py mutate [module ...]     e.g. checks/settings.py templatetags/whos_online.py
    python3 dev.py mutate --since REV      only the lines changed since the git revision REV

A run of named modules replaces their rows in ``results.md`` and keeps the
other modules' rows from the run before, so a fixed module can be run again alone.

Each mutant is one small fault (a comparison or boolean operator swapped, a
``not`` dropped, a number moved by one, a flag flipped, a string emptied, a
return value or a call statement removed, a ``max`` turned into ``min``) put
into one module; the Lua scripts (``lua/*.lua``, ``lua/lib/*.lua``) are modules too
(``'+inf'`` and ``'-inf'`` swapped, ``>`` and ``>=``, an ``ARGV``/``KEYS`` index
moved, a ``redis.call`` line or a ``GT``/``REV`` option dropped), tested by
``store/scripts.py``'s tests. Off-the-shelf tools miss
much of this package: mutmut 3 skips decorated functions, module constants and
string contents, and cosmic-ray mutates no Lua either and runs one test command
for every mutant.

Every mutant is written into a throw-away copy of the project (the working tree
is never touched) and only the tests of its module run (``TESTS`` below, then
those of the modules importing it), with ``-x``, a timeout and fakeredis only,
two at a time. Mutants listed in ``EQUIVALENT.md`` (they cannot change behaviour)
leave the score. The table and the survivors go to ``results.md``.
"""

from __future__ import annotations

import ast
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "whos_online"
HERE = Path(__file__).resolve().parent
EQUIVALENT = HERE / "EQUIVALENT.md"
RESULTS = HERE / "results.md"
WORKERS = int(os.environ.get("MUTATE_WORKERS", "2"))  # the machine's cores are shared

# Module -> the tests that exercise it most directly (run first: -x stops at the first kill).
TESTS = {
    "__init__.py": ["test_app.py"],
    "contrib/admin/admin.py": ["test_admin.py", "test_chart.py"],
    "contrib/admin/checks.py": ["test_admin.py"],
    "contrib/admin/stats.py": ["test_admin.py", "test_presence.py", "test_chart.py"],
    "rendering/announcements.py": ["test_live.py", "test_consumers.py", "test_realtime_trust.py"],
    "apps.py": ["test_app.py", "test_checks.py"],
    "rendering/blockcache.py": ["test_blockcache.py", "test_templatetag.py"],
    "visitors/bots.py": ["test_bots.py", "test_checks.py"],
    "contrib/admin/chart.py": ["test_chart.py", "test_admin.py"],
    "visitors/client_ip.py": ["test_client_ip.py", "test_middleware.py", "test_guests.py"],
    "conf.py": ["test_conf.py"],
    "store/connection.py": ["test_connection.py"],
    "store/counting.py": ["test_counting.py"],
    "checks/deployment.py": ["test_checks.py", "test_url_rooms.py"],
    "store/failsafe.py": ["test_failsafe.py"],
    "store/guests.py": ["test_guests.py", "test_presence.py"],
    "visitors/guests.py": ["test_rooms.py"],
    "contrib/jinja2/__init__.py": ["test_jinja2.py"],
    "store/members.py": ["test_members.py", "test_hidden.py", "test_long_lists.py"],
    "middleware.py": [
        "test_middleware.py",
        "test_http_caching.py",
        "test_not_visits.py",
        "test_cookie.py",
    ],
    "models.py": ["test_app.py", "test_admin.py"],
    "presence.py": ["test_presence.py"],
    "access.py": ["test_realtime_trust.py"],
    "contrib/channels/consumers.py": ["test_consumers.py", "test_realtime_trust.py"],
    "contrib/channels/hub.py": ["test_consumers.py"],
    "contrib/channels/routing.py": ["test_consumers.py"],
    "contrib/channels/checks.py": ["test_channels_checks.py"],
    "store/reading.py": [
        "test_presence.py",
        "test_status.py",
        "test_hidden.py",
        "test_counting.py",
        "test_long_lists.py",
    ],
    "store/recording.py": [
        "test_presence.py",
        "test_guests.py",
        "test_flood.py",
        "test_rooms.py",
        "test_counting.py",
    ],
    "room_names.py": ["test_conf.py", "test_rooms.py"],
    "rooms/pages.py": ["test_rooms.py"],
    "store/scripts.py": [
        "test_scripts.py",
        "test_presence.py",
        "test_peak.py",
        "test_guests.py",
        "test_rooms.py",
        "test_long_lists.py",
        "test_counting.py",
    ],
    "checks/settings.py": ["test_checks.py"],
    "settings_table.py": ["test_conf.py", "test_checks.py", "test_docs.py"],
    "signals.py": ["test_middleware.py"],
    "store/sockets.py": [
        "test_consumers.py",
        "test_scripts.py",
        "test_status.py",
        "test_server_sent_events.py",
    ],
    "store/stats.py": ["test_peak.py", "test_presence.py", "test_command.py", "test_counting.py"],
    "tasks.py": ["test_tasks.py"],
    "rendering/block.py": [
        "test_templatetag.py",
        "test_live.py",
        "test_status.py",
        "test_blockcache.py",
        "test_rooms.py",
        "test_hidden.py",
    ],
    "templatetags/whos_online.py": ["test_templatetag.py", "test_status.py", "test_jinja2.py"],
    "urls.py": ["test_live.py"],
    "views.py": ["test_live.py"],
    "visitors/visits.py": [
        "test_middleware.py",
        "test_not_visits.py",
        "test_bots.py",
        "test_faults.py",
    ],
    "management/commands/whos_online_prune.py": ["test_command.py", "test_flood.py"],
}
# Pins behaviour across modules, so it runs for every mutant.
ALWAYS = ["test_pinned.py"]


@dataclass(frozen=True)
class Mutant:
    module: str  # relative to the package, e.g. "checks/settings.py"
    line: int
    code: str  # the line as written, stripped
    old: str
    new: str
    start: int  # byte offsets of the replaced text in the module
    end: int
    replacement: bytes
    nth: int = 1  # the same mutation on the same line again

    @property
    def mutation(self) -> str:
        again = f" (#{self.nth})" if self.nth > 1 else ""
        return f"{_short(self.old)} → {_short(self.new)}{again}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end :]


def _short(text: str, width: int = 40) -> str:
    text = " ".join(text.split()) or "''"
    return text if len(text) <= width else text[: width - 1] + "…"


# --- Python mutations -------------------------------------------------------

COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">")}
COMPARE |= {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not")}
COMPARE |= {ast.IsNot: ("is not", "is"), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in")}
ARITHMETIC = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/")}
ARITHMETIC |= {ast.Div: ("/", "*"), ast.FloorDiv: ("//", "/"), ast.LShift: ("<<", ">>")}
ARITHMETIC |= {ast.RShift: (">>", "<<")}
SWAPPED_CALLS = {"max": "min", "min": "max", "any": "all", "all": "any"}
# Calls whose string arguments are names for type checkers, not behaviour.
TYPING_CALLS = {"cast", "TypeVar", "ParamSpec"}


class PythonMutator(ast.NodeVisitor):
    def __init__(self, module: str, source: bytes) -> None:
        self.module, self.source = module, source
        self.lines = source.split(b"\n")
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line) + 1)
        self.found: list[Mutant] = []

    def offset(self, line: int, col: int) -> int:
        return self.offsets[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def add(self, start: int, end: int, new: str) -> None:
        line = self.source.count(b"\n", 0, start) + 1
        code = self.lines[line - 1].decode().strip()
        old = self.source[start:end].decode()
        self.found.append(Mutant(self.module, line, code, old, new, start, end, new.encode()))

    def between(self, left: ast.AST, right: ast.AST, token: str, new: str) -> None:
        """Replace the operator ``token`` written between two operands."""
        start, end = self.span(left)[1], self.span(right)[0]
        gap = self.source[start:end].decode()
        pattern = r"(?<![\w<>=!/*+-])" + re.escape(token).replace(r"\ ", r"\s+") + r"(?![\w<>=/*])"
        match = re.search(pattern, gap)
        if match:
            self.add(
                start + len(gap[: match.start()].encode()),
                start + len(gap[: match.end()].encode()),
                new,
            )

    # Nothing inside these is behaviour: docstrings, annotations, typing names.
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        if isinstance(node.value, (ast.Call, ast.Await)):
            self.add(*self.span(node), "pass")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for child in [
            *node.decorator_list,
            *node.args.defaults,
            *node.args.kw_defaults,
            *node.body,
        ]:
            if child is not None:
                self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        pass

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in TYPING_CALLS:
            return
        if name in SWAPPED_CALLS:
            self.add(*self.span(node.func), SWAPPED_CALLS[name])
        self.generic_visit(node)

    # The mutations.
    def visit_Compare(self, node: ast.Compare) -> None:
        for left, op, right in zip([node.left, *node.comparators], node.ops, node.comparators):
            token, new = COMPARE[type(op)]
            self.between(left, right, token, new)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        token, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:]):
            self.between(left, right, token, new)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in ARITHMETIC:
            self.between(node.left, node.right, *ARITHMETIC[type(node.op)])
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if type(node.op) in ARITHMETIC:
            token, new = ARITHMETIC[type(node.op)]
            self.between(node.target, node.value, token + "=", new + "=")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, (ast.Not, ast.USub)):
            start, end = self.span(node.operand)
            self.add(self.span(node)[0], end, self.source[start:end].decode())
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None
        ):
            self.add(*self.span(node), "return None")
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.add(*self.span(node), '""')  # its parts are not mutated one by one

    def visit_Constant(self, node: ast.Constant) -> None:
        value, (start, end) = node.value, self.span(node)
        if isinstance(value, bool):
            self.add(start, end, str(not value))
        elif isinstance(value, (int, float)):
            for new in (value + 1, value - 1):
                self.add(start, end, repr(new))
        elif isinstance(value, str) and value:
            self.add(start, end, '""')


# --- Lua mutations (a .lua file, read whole) --------------------------------

# A comment is skipped whole: its words are no code, and an apostrophe in one
# ("the window's") would otherwise open a string that swallows the code after it.
LUA_TOKENS = re.compile(
    r"(?P<comment>--[^\n]*)"
    r"|(?P<drop>,\s*'(?:GT|REV|WITHSCORES)')"
    r"|(?P<string>'[^']*')"
    r"|(?P<argv>ARGV\[\d+\])"
    r"|(?P<word>\b(?:and|or|not|true|false|min|max)\b)"
    r"|(?P<number>\b\d+\b)"
    r"|(?P<op>>=|<=|==|~=|[<>+-])"
)
LUA_SWAPS = {
    "'+inf'": "'-inf'", "'-inf'": "'+inf'", "'0'": "'1'", "'1'": "'0'",
    "and": "or", "or": "and", "true": "false", "false": "true", "min": "max", "max": "min",
    ">=": ">", "<=": "<", ">": ">=", "<": "<=", "==": "~=", "~=": "==", "+": "-", "-": "+",
}  # fmt: skip
DROPPABLE_LINE = re.compile(r"^\s*(?:redis\.p?call\(.*\)|if .* then redis\.p?call\(.*\) end)\s*$")


def lua_mutants(python: PythonMutator, start: int, end: int) -> Iterator[Mutant]:
    text = python.source[start:end].decode()

    def mutant(at: int, until: int, new: str) -> Mutant:
        a, b = start + len(text[:at].encode()), start + len(text[:until].encode())
        line = python.source.count(b"\n", 0, a) + 1
        code = python.lines[line - 1].decode().strip()
        old = python.source[a:b].decode()
        return Mutant(python.module, line, code, old, new, a, b, new.encode())

    for match in LUA_TOKENS.finditer(text):
        token, kind = match.group(), match.lastgroup
        if kind == "comment":
            continue
        if kind == "drop":
            yield mutant(match.start(), match.end(), "")
        elif kind == "argv":
            yield mutant(match.start() + 5, match.end() - 1, str(int(token[5:-1]) + 1))
            beside = text[match.start() - 8 : match.start()] + text[match.end() : match.end() + 8]
            if "inf'" in beside:  # a score range's bound: dropping it ignores the window
                yield mutant(match.start(), match.end(), "'-inf'")
        elif kind == "number":
            yield mutant(match.start(), match.end(), str(int(token) + 1))
        elif token == "not":
            yield mutant(match.start(), match.end() + 1, "")
        elif token in LUA_SWAPS:
            yield mutant(match.start(), match.end(), LUA_SWAPS[token])
    at = 0
    for line in text.splitlines(keepends=True):
        if DROPPABLE_LINE.match(line):
            yield mutant(at, at + len(line.rstrip("\n")), "")
        at += len(line)


def mutants(module: str, package: Path = PACKAGE) -> list[Mutant]:
    """The mutants of ``module`` as it is in ``package`` (a run's copy, never edited meanwhile)."""
    source = (package / module).read_bytes()
    mutator = PythonMutator(module, source)
    if module.endswith(".lua"):
        mutator.found = list(lua_mutants(mutator, 0, len(source)))
    else:
        mutator.visit(ast.parse(source))
    seen: Counter[tuple[str, str]] = Counter()
    numbered = []
    for m in sorted(mutator.found, key=lambda m: (m.start, m.end, m.new)):
        seen[m.code, m.mutation] += 1
        numbered.append(replace(m, nth=seen[m.code, m.mutation]))
    return numbered


# --- Which tests, equivalents, running ----------------------------------------


def modules() -> list[str]:
    paths = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.lua")]
    found = sorted(p.relative_to(PACKAGE).as_posix() for p in paths)
    return [m for m in found if "migrations/" not in m and (PACKAGE / m).stat().st_size]


def importers() -> dict[str, set[str]]:
    """Module -> the package modules that import it (directly or through others)."""
    python = [m for m in modules() if m.endswith(".py")]
    dotted = {"whos_online." + m[:-3].replace("/", "."): m for m in python}
    direct: dict[str, set[str]] = defaultdict(set)
    for module in dotted.values():
        for node in ast.walk(ast.parse((PACKAGE / module).read_bytes())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name in dotted and dotted[name] != module:
                    direct[dotted[name]].add(module)
    closure: dict[str, set[str]] = {}
    for module in dotted.values():
        seen: set[str] = set()
        todo = [module]
        while todo:
            for importer in direct[todo.pop()] - seen:
                seen.add(importer)
                todo.append(importer)
        closure[module] = seen
    return closure


def test_files(module: str, importing: dict[str, set[str]]) -> list[str]:
    """The tests of ``module``, then those of the modules importing it (a script's:
    store/scripts.py's, which reads it)."""
    if module.endswith(".lua"):
        module = "store/scripts.py"
    files = TESTS.get(module, []) + ALWAYS
    for importer in sorted(importing[module]):
        files += TESTS.get(importer, [])
    return ["tests/" + name for name in dict.fromkeys(files)]


Key = tuple[str, str, str]  # module, code, mutation


def key(mutant: Mutant) -> Key:
    return (mutant.module, mutant.code, mutant.mutation)


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table_cells(line: str) -> list[str]:
    """A markdown table row's cells (a ``\\|`` inside one is not a border)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def equivalents() -> dict[Key, str]:
    """EQUIVALENT.md's table rows: | module:line | mutation | code | why |."""
    found = {}
    for line in EQUIVALENT.read_text().splitlines():
        cells = [cell.replace("\\|", "|") for cell in table_cells(line)]
        if len(cells) == 4 and ":" in cells[0] and cells[3] and not set(cells[3]) <= {"-"}:
            code = cells[2].strip("`")
            found[(cells[0].rsplit(":", 1)[0], code, cells[1].strip("`"))] = cells[3]
    return found


def copy_project(into: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "db.sqlite3", "_build")
    # docs/ and the README too: tests run the docs' snippets word for word.
    for name in ("whos_online", "tests", "example_project", "docs"):
        shutil.copytree(ROOT / name, into / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, into)
    return into


def pytest(copy: Path, files: list[str], timeout: float) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CI")}
    env["PYTHONDONTWRITEBYTECODE"] = (
        "1"  # a mutant of the same size and second must not hit a stale .pyc
    )
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *files]
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "killed"


def changed_lines(module: str, since: str) -> set[int]:
    """The lines of ``module`` added or changed since the git revision ``since``."""
    diff = subprocess.run(
        ["git", "diff", "--unified=0", since, "--", f"whos_online/{module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines: set[int] = set()
    for hunk in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.MULTILINE):
        start = int(hunk[1])
        lines.update(range(start, start + int(hunk[2] or 1)))
    return lines


def main(argv: list[str]) -> int:
    # A kill stops the run as Ctrl-C does: no new mutants, the copies removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    since, command = None, argv
    if "--since" in argv:
        at = argv.index("--since")
        since, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    changed = {m: changed_lines(m, since) for m in modules()} if since else {}
    chosen = [m.removeprefix("whos_online/") for m in argv] or [
        m for m in modules() if not since or changed[m]
    ]
    unknown = set(chosen) - set(modules())
    if unknown:
        sys.exit(f"mutate.py: no such module in whos_online/: {', '.join(sorted(unknown))}")
    known, importing = equivalents(), importers()
    # A run of named modules updates their rows; the other modules' stay.
    kept = earlier_results() if argv and not since else ({}, [])
    used: set[Key] = set()
    results: dict[str, Counter[str]] = {}
    survivors: list[tuple[Mutant, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="whos_online-mutants-") as tmp:
        copies: queue.Queue[Path] = queue.Queue()
        for i in range(WORKERS):
            copies.put(copy_project(Path(tmp, str(i))))

        def run(mutant: Mutant, files: list[str], timeout: float) -> str:
            copy = copies.get()
            path = copy / "whos_online" / mutant.module
            original = path.read_bytes()
            try:
                path.write_bytes(mutant.apply(original))
                # Most mutants fail in the module's first test file: run it alone
                # first, so they skip collecting the rest (several seconds each).
                first = pytest(copy, files[:1], timeout)
                return first if first != "survived" else pytest(copy, files, timeout)
            finally:
                path.write_bytes(original)
                copies.put(copy)

        for module in chosen:
            files = test_files(module, importing)
            began = time.monotonic()
            if pytest(Path(tmp, "0"), files, timeout=600) != "survived":
                sys.exit(f"mutate.py: the tests of {module} fail without any mutant: {files}")
            # Generous: a surviving mutant runs as long as this clean run, and
            # the machine may be busier later; only a mutant that loops hits it.
            timeout = 4 * (time.monotonic() - began) + 30
            every = mutants(module, Path(tmp, "0", "whos_online"))
            used |= {key(m) for m in every} & set(known)
            if since:
                every = [m for m in every if m.line in changed[module]]
            todo = [m for m in every if key(m) not in known]
            pool = ThreadPoolExecutor(WORKERS)
            try:
                outcomes = list(pool.map(lambda m: run(m, files, timeout), todo))
            except KeyboardInterrupt:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown()
            counts = Counter(outcomes)
            counts["equivalent"] = len(every) - len(todo)
            counts["seconds"] = round(time.monotonic() - began)
            results[module] = counts
            survivors += [(m, o) for m, o in zip(todo, outcomes) if o != "killed"]
            print(f"{module}: {summary(counts)} ({counts['seconds']} s)", flush=True)
            stale = [k for k in known if k[0] in results and k not in used]
            seconds = time.monotonic() - started
            RESULTS.write_text(report(command, results, survivors, stale, seconds, kept))
    print(f"mutate.py: {RESULTS.relative_to(ROOT)} written")
    return 1 if any(o == "survived" for _, o in survivors) else 0


EARLIER = " (earlier run)"
COLUMNS = ("killed", "survived", "timeout", "equivalent")


def score(counts: Counter[str]) -> float:
    judged = counts["killed"] + counts["survived"] + counts["timeout"]
    return 100.0 * (counts["killed"] + counts["timeout"]) / judged if judged else 100.0


def summary(counts: Counter[str]) -> str:
    parts = [f"{counts[k]} {k}" for k in COLUMNS]
    return ", ".join(parts) + f": {score(counts):.1f}%"


# results.md's rows per module, and its survivor rows as (module, row).
Earlier = tuple[dict[str, Counter[str]], list[tuple[str, str]]]


def earlier_results() -> Earlier:
    """What results.md holds now, for the modules a run of named ones leaves alone."""
    counts: dict[str, Counter[str]] = {}
    survivors = []
    for line in RESULTS.read_text().splitlines() if RESULTS.exists() else []:
        cells = table_cells(line)
        if len(cells) == 7 and cells[1].isdigit() and cells[0] != "**total**":
            numbers = map(int, [*cells[1:5], cells[6]])
            counts[cells[0].removesuffix(EARLIER)] = Counter(
                dict(zip([*COLUMNS, "seconds"], numbers))
            )
        elif len(cells) == 4 and cells[3] in ("survived", "timeout"):
            survivors.append((cells[0].rsplit(":", 1)[0], line))
    return counts, survivors


def report(
    argv: list[str],
    results: dict[str, Counter[str]],
    survivors: list[tuple[Mutant, str]],
    stale: list[Key],
    seconds: float,
    kept: Earlier = ({}, []),
) -> str:
    earlier = {m + EARLIER: c for m, c in kept[0].items() if m not in results}
    total: Counter[str] = sum([*results.values(), *earlier.values()], Counter())
    lines = [
        "# Mutation testing results",
        "",
        f"`python3 dev.py mutate {' '.join(argv or results)}`: {seconds:.0f} s. The score counts"
        " timeouts"
        " as killed and leaves equivalent mutants out.",
        "",
        *(
            ["Rows marked (earlier run), and their survivors, are kept from an earlier run.", ""]
            if earlier
            else []
        ),
        "| Module | Killed | Survived | Timeout | Equivalent | Score | Seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for module, c in [*results.items(), *earlier.items(), ("**total**", total)]:
        cells = [c[column] for column in COLUMNS]
        lines.append(row([module, *map(str, cells), f"{score(c):.1f}%", str(c["seconds"])]))
    lines += ["", "## Survivors and timeouts", ""]
    lines += ["Paste a row into EQUIVALENT.md, with the reason, if the mutant changes nothing.", ""]
    lines += ["| Mutant | Mutation | Code | Outcome |", "|---|---|---|---|"]
    for m, outcome in survivors:
        lines.append(row([f"{m.module}:{m.line}", f"`{m.mutation}`", f"`{m.code}`", outcome]))
    lines += [line for module, line in kept[1] if module not in results]
    if stale:
        lines += ["", "## Entries of EQUIVALENT.md that match no mutant (code changed?)", ""]
        lines += [f"- {module}: `{mutation}` in `{code}`" for module, code, mutation in stale]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit("mutate.py: stopped")
