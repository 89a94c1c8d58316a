"""`python -m generator.apps`: the suite with its stage counts and sizes."""

from __future__ import annotations

import sys

from generator.apps import APPS


def _size(shape) -> str:
    return " x ".join(map(str, shape)) if isinstance(shape, tuple) else str(shape)


def rows() -> list[tuple[str, ...]]:
    """One row per app: name, Funcs, stages (pure + update definitions), inputs, output sizes, expert."""
    out = []
    for name, app in APPS.items():
        full, small = app.build("full"), app.build("small")
        stages = sum(len(n.stages) for n in full.dag.nodes)
        sizes = [_size(full.output_sizes[o]) for o in full.output_names]
        small_sizes = [_size(small.output_sizes[o]) for o in small.output_names]
        out.append((name, str(len(full.funcs)), str(stages), str(len(full.inputs)), ", ".join(sizes),
                    ", ".join(small_sizes), "yes" if app.schedule else "no", app.description))
    return out


def main() -> int:
    header = ("app", "Funcs", "stages", "inputs", "full size", "small size", "expert", "description")
    table = [header, *rows()]
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    n_expert = sum(r[6] == "yes" for r in table[1:])
    print(f"\n{len(table) - 1} apps, {n_expert} with an expert schedule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
