"""The `hf-structure` command's entry point, kept out of the `hf_structure` package.

Importing `hf_structure` registers its models with transformers' Auto classes, which imports torch and transformers'
model code (seconds). With this module loaded first, `hf_structure` leaves that to the command, which registers once
its arguments are parsed and only for a command that runs: `hf-structure --version`, `--help` and the `--help` of a
command whose options do not come from the models answer without torch.
"""


def main() -> None:
    from hf_structure.cli import main as run_command

    run_command()
