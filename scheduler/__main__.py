"""`python -m scheduler app=unsharp algorithm=beam model=analytical [measure=true]`: runs the scheduler's
command line, generator/schedule.py (`python -m generator.schedule`, the same command).

The command picks pipelines from the app suite and the random generator, which sit a layer above the
scheduler (DESIGN §1); so it lives there, and this entry point runs it by name, importing nothing of it:
the scheduler package itself never loads generator (tests/test_layering.py).
"""

import runpy

runpy.run_module("generator.schedule", run_name="__main__", alter_sys=True)
