"""gpulease: one `pulumi up` per GPU training experiment. The program lives in components/program.py."""

from components.program import main

main()
