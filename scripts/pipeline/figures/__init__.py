"""The figures of the paper and the numbers it quotes, a module each (plot.py draws them).

Each has draw(run: common.Run) and MACROS, the literal names of the \\num macros it writes."""
