"""``calculate``: the app's default tool, arithmetic a voice assistant can trust to read aloud.

The expression is evaluated by ``simpleeval`` under an AST allowlist (numbers, arithmetic and comparison
operators, the functions below; no names, attributes, imports or other calls), so anyone who can talk to
the agent reaches this tool, not the machine. Bad input (a syntax error, an unknown name, a power too
large, a division by zero) raises ``ValueError`` with a sentence the model can read; Strands turns it
into an error tool result and the turn goes on. Why a tool of its own: architecture §10.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from simpleeval import DEFAULT_OPERATORS, InvalidExpression, SimpleEval
from strands import tool

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 10_000
MAX_RESULT_BITS = 100_000
"""Larger powers are refused: ``9**9**9`` would keep the agent's worker busy for minutes."""
SIGNIFICANT_DIGITS = 12
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": lambda n: math.factorial(bounded_count(n)),
}
NAMES: dict[str, float] = {"pi": math.pi, "e": math.e}


def bounded_count(n: Any) -> int:
    """``n`` as a small whole number (``factorial`` of a large one would not finish either)."""
    if not isinstance(n, int) or not 0 <= n <= 1000:
        raise ValueError("factorial takes a whole number from 0 to 1000")
    return n


def bounded_power(base: Any, exponent: Any) -> Any:
    """``base ** exponent``, refusing exponents whose result would take long to compute or to read."""
    if isinstance(exponent, int | float) and abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"the exponent {exponent} is too large (at most {MAX_EXPONENT})")
    if isinstance(base, int) and isinstance(exponent, int) and base.bit_length() * exponent > MAX_RESULT_BITS:
        raise ValueError("the power is too large to work out")
    return operator.pow(base, exponent)


EVALUATOR = SimpleEval(
    operators={**DEFAULT_OPERATORS, ast.Pow: bounded_power},
    functions=FUNCTIONS,
    names=NAMES,
)


def spoken_number(value: Any) -> str:
    """The result as the model should read it: whole numbers exact, others to 12 significant digits."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) < 10**SIGNIFICANT_DIGITS else f"{value:.{SIGNIFICANT_DIGITS}g}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("the result is not a finite number")
        if value.is_integer() and abs(value) < 10**SIGNIFICANT_DIGITS:
            return str(int(value))
        return f"{value:.{SIGNIFICANT_DIGITS}g}"
    raise ValueError(f"the expression gives a {type(value).__name__}, not a number")


def evaluate(expression: str) -> str:
    """Evaluate ``expression``; a clear ``ValueError`` for anything that is not plain arithmetic."""
    text = expression.strip()
    if not text:
        raise ValueError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"the expression is {len(text)} characters; at most {MAX_EXPRESSION_CHARS}")
    try:
        return spoken_number(EVALUATOR.eval(text.replace("^", "**")))
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except (InvalidExpression, SyntaxError) as exc:
        raise ValueError(f"not an arithmetic expression ({exc})") from None
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise ValueError(f"cannot evaluate {text!r} ({exc})") from None


@tool
def calculate(expression: str) -> str:
    """Work out an arithmetic expression exactly, e.g. ``17 * 23`` or ``sqrt(2) * (3 + 4.5) ^ 2``.

    Use it for any sum, product, percentage or unit conversion you are going to say aloud.

    Args:
        expression: Numbers, + - * / // % ^ (or **), parentheses, comparisons, pi, e and the functions
            abs, round, min, max, sqrt, exp, log, log10, sin, cos, tan, floor, ceil, factorial.
    """
    return evaluate(expression)
