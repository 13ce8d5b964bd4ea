"""Tokenise a workspace shell command line without interpreting it.

The grammar is a small subset of POSIX sh: words separated by blanks,
single quotes (literal), double quotes (literal except ``\\"`` and ``\\\\``),
backslash escapes outside quotes, and pipelines ``a | b``. Nothing is ever
expanded or executed by a shell. Everything else a shell would interpret is
refused with :class:`ShellSyntaxError` before any command runs:
``;``, ``&``, ``&&``, ``||``, redirections (``<``, ``>``), subshells,
newlines, command substitution (``$(...)``, backticks) and variable
expansion (``$NAME``, ``${...}``), unless quoted with single quotes.

Unquoted ``*``, ``?`` and ``[`` mark a word for globbing, which the shell
engine performs itself inside the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass

from srh_core.errors import SRHarnessError

MAX_COMMAND_CHARS = 8192
MAX_PIPELINE_STAGES = 8
OPERATOR_CHARS = frozenset(";&<>()|\n")
GLOB_CHARS = frozenset("*?[")
DOUBLE_QUOTE_ESCAPES = frozenset('"\\$`')


class ShellSyntaxError(SRHarnessError, ValueError):
    """A command line uses shell syntax the workspace shell does not support."""


@dataclass(frozen=True)
class Word:
    """One argument: its text and whether it has unquoted glob characters."""

    text: str
    glob: bool = False


def _refuse_dollar(line: str, index: int) -> None:
    following = line[index + 1: index + 2]
    if following == "(":
        raise ShellSyntaxError("Command substitution '$(...)' is not supported: no shell "
                               "runs here. Run the commands one by one.")
    if following == "{" or following.isalnum() or following in "_@*#?!$-":
        raise ShellSyntaxError("Variable expansion ('$NAME') is not supported; quote a "
                               "literal '$' with single quotes.")


def _operator(line: str, index: int) -> str:
    char = line[index]
    pair = line[index: index + 2]
    if char == "|" and pair != "||":
        return "|"
    shown = pair if pair in ("&&", "||", ">>", "<<") else "newline" if char == "\n" else char
    raise ShellSyntaxError(
        f"Shell operator {shown!r} is not supported. Only pipelines 'a | b' are; "
        "run other commands in separate calls (no ';', '&&', redirections or subshells)."
    )


class _Lexer:
    def __init__(self, line: str) -> None:
        self.line = line
        self.tokens: list[Word | str] = []
        self.buffer: list[str] = []
        self.started = False
        self.glob = False

    def flush(self) -> None:
        if self.started:
            self.tokens.append(Word("".join(self.buffer), self.glob))
        self.buffer, self.started, self.glob = [], False, False

    def add(self, text: str, *, globbable: bool = False) -> None:
        self.buffer.append(text)
        self.started = True
        self.glob = self.glob or (globbable and text in GLOB_CHARS)

    def run(self) -> list[Word | str]:
        index = 0
        while index < len(self.line):
            index = self.step(index)
        self.flush()
        return self.tokens

    def step(self, index: int) -> int:
        char = self.line[index]
        if char in " \t":
            self.flush()
        elif char in OPERATOR_CHARS:
            self.flush()
            self.tokens.append(_operator(self.line, index))
        elif char == "'":
            return self.single_quoted(index + 1)
        elif char == '"':
            return self.double_quoted(index + 1)
        elif char == "\\":
            if index + 1 >= len(self.line):
                raise ShellSyntaxError("The command ends with a lone backslash.")
            self.add(self.line[index + 1])
            return index + 2
        elif char == "`":
            raise ShellSyntaxError("Backtick command substitution is not supported.")
        else:
            if char == "$":
                _refuse_dollar(self.line, index)
            self.add(char, globbable=True)
        return index + 1

    def single_quoted(self, index: int) -> int:
        end = self.line.find("'", index)
        if end < 0:
            raise ShellSyntaxError("Unterminated single quote.")
        self.add(self.line[index:end])
        return end + 1

    def double_quoted(self, index: int) -> int:
        self.started = True
        while index < len(self.line):
            char = self.line[index]
            if char == '"':
                return index + 1
            if char == "\\" and self.line[index + 1: index + 2] in DOUBLE_QUOTE_ESCAPES:
                self.add(self.line[index + 1])
                index += 2
                continue
            if char == "`":
                raise ShellSyntaxError("Backtick command substitution is not supported.")
            if char == "$":
                _refuse_dollar(self.line, index)
            self.add(char)
            index += 1
        raise ShellSyntaxError("Unterminated double quote.")


def parse_pipeline(line: str) -> list[list[Word]]:
    """Split a command line into pipeline stages of words.

    Raises:
        ShellSyntaxError: Unsupported syntax, an empty stage, or too long a line.
    """
    if not isinstance(line, str) or not line.strip():
        raise ShellSyntaxError("Empty command. Example: 'ls -l' or 'cat data.csv | head -5'.")
    if len(line) > MAX_COMMAND_CHARS or "\x00" in line:
        raise ShellSyntaxError(f"Commands are limited to {MAX_COMMAND_CHARS} characters "
                               "without NUL bytes.")
    stages: list[list[Word]] = [[]]
    for token in _Lexer(line).run():
        if isinstance(token, Word):
            stages[-1].append(token)
        elif not stages[-1]:
            raise ShellSyntaxError("A pipeline stage is empty: write 'a | b'.")
        else:
            stages.append([])
    if not stages[-1]:
        raise ShellSyntaxError("A pipeline stage is empty: write 'a | b'.")
    if len(stages) > MAX_PIPELINE_STAGES:
        raise ShellSyntaxError(f"Pipelines are limited to {MAX_PIPELINE_STAGES} commands.")
    return stages
