"""Import direction (STYLE.md habit 1): theory and numerics import without torch or matplotlib."""

import subprocess
import sys
import textwrap


def test_theory_and_numerics_import_without_torch_and_matplotlib():
    code = textwrap.dedent(
        """
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('torch', 'matplotlib', 'neural', 'validation'):
                    raise ImportError('blocked: ' + name)
                return None
        sys.meta_path.insert(0, _Block())
        import pkgutil, importlib, numerics, theory
        for pkg in (numerics, theory):
            for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):
                importlib.import_module(m.name)
        print('ok')
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cli_help_lists_subcommands():
    from click.testing import CliRunner

    from validation.cli import main

    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    assert "bench" in result.output
