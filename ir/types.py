"""Scalar types of the DSL and Halide's rules for matching them.

A `Type` is a (code, bits) pair as in Halide: bool, unsigned and signed integers of 8/16/32 bits, and
32/64-bit floats. Integer arithmetic wraps in its type; `match_types` is Halide's coercion rule for
binary operators (`IROperator.cpp: match_types`), applied when a definition is elaborated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Type:
    code: str  # "bool" | "uint" | "int" | "float"
    bits: int

    @property
    def name(self) -> str:
        if self.code == "bool":
            return "bool"
        return {"uint": "u", "int": "i", "float": "f"}[self.code] + str(self.bits)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.code == "float"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_DTYPES[self.name])

    @property
    def bytes(self) -> int:
        return 1 if self.code == "bool" else self.bits // 8

    @property
    def min(self) -> int | float:
        if self.code == "bool":
            return 0
        if self.code == "uint":
            return 0
        if self.code == "int":
            return -(1 << (self.bits - 1))
        return float("-inf")

    @property
    def max(self) -> int | float:
        if self.code == "bool":
            return 1
        if self.code == "uint":
            return (1 << self.bits) - 1
        if self.code == "int":
            return (1 << (self.bits - 1)) - 1
        return float("inf")

    def can_represent(self, value: int | float | bool) -> bool:
        """Whether a Python literal converts to this type without change (Halide's check_representable)."""
        if isinstance(value, bool):
            return True
        if self.is_float:
            return True
        if isinstance(value, float):
            return False
        return self.min <= value <= self.max

    def wrap(self, value: int) -> int:
        """Wrap a Python int into this integer type's range (two's complement)."""
        if self.code == "bool":
            return int(value != 0)
        if self.code == "uint":
            return value & ((1 << self.bits) - 1)
        if self.code == "int":
            v = value & ((1 << self.bits) - 1)
            return v - (1 << self.bits) if v >= (1 << (self.bits - 1)) else v
        raise TypeError(f"wrap of non-integer type {self}")


bool_ = Type("bool", 1)
u8 = Type("uint", 8)
u16 = Type("uint", 16)
u32 = Type("uint", 32)
i8 = Type("int", 8)
i16 = Type("int", 16)
i32 = Type("int", 32)
f32 = Type("float", 32)
f64 = Type("float", 64)

ALL_TYPES = (bool_, u8, u16, u32, i8, i16, i32, f32, f64)
_BY_NAME = {t.name: t for t in ALL_TYPES}
_DTYPES = {
    "bool": "bool", "u8": "uint8", "u16": "uint16", "u32": "uint32",
    "i8": "int8", "i16": "int16", "i32": "int32", "f32": "float32", "f64": "float64",
}


def type_from_name(name: str) -> Type:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown type {name!r}; expected one of {', '.join(_BY_NAME)}") from None


def type_of_dtype(dtype: np.dtype) -> Type:
    dtype = np.dtype(dtype)
    for t in ALL_TYPES:
        if t.dtype == dtype:
            return t
    raise ValueError(f"numpy dtype {dtype} has no schedlab type")


def match_types(a: Type, b: Type) -> Type | None:
    """The common type Halide coerces two operands to, or None if they cannot be matched.

    float beats int; the wider float wins; two uints widen to the wider; any other pair of integers
    becomes a signed integer of the wider width. bool never matches a different type implicitly.
    """
    if a == b:
        return a
    if a.is_bool or b.is_bool:
        return None
    if a.is_float and b.is_float:
        return a if a.bits >= b.bits else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a.is_uint and b.is_uint:
        return a if a.bits >= b.bits else b
    return Type("int", max(a.bits, b.bits))


def literal_type(value: int | float | bool) -> Type:
    """Type of a Python literal with no other operand to take a type from (Halide: int -> i32)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return i32
    return f32
