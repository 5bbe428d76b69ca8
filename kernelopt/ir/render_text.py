"""The text side of rendering: linear index expressions printed canonically, slices,
and a writer that lays calls out the way the project's formatter would."""

from __future__ import annotations

from dataclasses import dataclass, field

LINE = 100  # the project's formatter line length; rendered text is already formatted


@dataclass(frozen=True)
class Lin:
    """An integer linear expression over loop variables, printed canonically."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    def __add__(self, other: Lin | int) -> Lin:
        if isinstance(other, int):
            return Lin(self.terms, self.const + other)
        merged = dict(self.terms)
        for v, c in other.terms:
            merged[v] = merged.get(v, 0) + c
        return Lin(tuple((v, c) for v, c in merged.items() if c), self.const + other.const)

    def __mul__(self, k: int) -> Lin:
        return Lin(tuple((v, c * k) for v, c in self.terms if c * k), self.const * k)

    def __str__(self) -> str:
        parts = [v if c == 1 else f"{v} * {c}" for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    @property
    def simple(self) -> bool:
        return len(self.terms) + (1 if self.const else 0) <= 1 and all(
            c == 1 for _, c in self.terms
        )


def var(name: str) -> Lin:
    return Lin(((name, 1),))


def slice_text(lo: Lin, width: int) -> str:
    hi = lo + width
    sep = ":" if lo.simple and hi.simple else " : "
    return f"{lo}{sep}{hi}"


@dataclass
class Writer:
    lines: list[str] = field(default_factory=list)

    def line(self, indent: int, text: str) -> None:
        self.lines.append(" " * indent + text)

    def call(self, indent: int, head: str, args: list[str]) -> None:
        """A call formatted the way the formatter would: one line, one body line, or exploded."""
        pad = " " * indent
        one = f"{pad}{head}({', '.join(args)})"
        if len(one) <= LINE:
            self.lines.append(one)
            return
        self.lines.append(f"{pad}{head}(")
        body = f"{pad}    {', '.join(args)}"
        if len(body) <= LINE:
            self.lines.append(body)
        else:
            for a in args:
                self._argument(indent + 4, a)
        self.lines.append(f"{pad})")

    def _argument(self, indent: int, arg: str) -> None:
        """One exploded argument; a too-long subscript breaks inside its brackets."""
        pad = " " * indent
        if len(pad) + len(arg) + 1 <= LINE or not arg.endswith("]") or "[" not in arg:
            self.lines.append(f"{pad}{arg},")
            return
        head, inner = arg[:-1].split("[", 1)
        self.lines.append(f"{pad}{head}[")
        if len(pad) + 4 + len(inner) <= LINE:
            self.lines.append(f"{pad}    {inner}")
        else:
            self.lines.extend(f"{pad}    {part.strip()}," for part in inner.split(","))
        self.lines.append(f"{pad}],")
