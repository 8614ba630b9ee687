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


# The floors inside numerics (STYLE.md, "This house's own patterns"): languages < messages < inference <
# sampling < exact; the shared top-level modules (estimate, schedules, draws, ...) import no wing
# and sit below all of them; a top-level module that does import a wing (a facade) sits above all.
_WING_FLOORS = {"languages": 1, "messages": 1.5, "inference": 2, "sampling": 3, "exact": 4}  # messages: the floor under inference and sampling
_TOP = 5


def _numerics_imports():
    """``{module: set of numerics modules it imports}``, lazy (in-function) imports included."""
    import ast
    import pathlib

    import numerics

    root = pathlib.Path(numerics.__file__).parent
    graph = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = ".".join(parts[:-1])
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.split(".")[0] == "numerics")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] == "numerics":
                    targets.add(base)
        graph[name] = targets
    return graph


def _floor(module, graph):
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in _WING_FLOORS:
        return _WING_FLOORS[parts[1]]
    imports_a_wing = any(len(t.split(".")) >= 2 and t.split(".")[1] in _WING_FLOORS for t in graph.get(module, ()))
    return _TOP if (module == "numerics" or imports_a_wing) else 0


def _upward(graph):
    return sorted(
        f"{src} (floor {_floor(src, graph)}) imports {dst} (floor {_floor(dst, graph)})"
        for src, targets in graph.items()
        for dst in targets
        if _floor(dst, graph) > _floor(src, graph)
    )


def test_numerics_wings_import_only_down():
    upward = _upward(_numerics_imports())
    assert not upward, "imports upwards inside numerics:\n" + "\n".join(upward)


def test_floor_check_sees_an_upward_import():
    """The check above can fail: a languages module importing exact, or a shared module importing a
    wing that a wing imports back, are caught; a facade on top importing a wing is not."""
    graph = {
        "numerics.languages.x": {"numerics.exact.entropy", "numerics.estimate"},
        "numerics.exact.entropy": {"numerics.inference.y"},
        "numerics.inference.y": {"numerics.metrics"},
        "numerics.metrics": {"numerics.exact.entropy"},
        "numerics.estimate": set(),
    }
    assert _upward(graph) == [
        "numerics.inference.y (floor 2) imports numerics.metrics (floor 5)",
        "numerics.languages.x (floor 1) imports numerics.exact.entropy (floor 4)",
    ]
