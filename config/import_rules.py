"""An import-linter contract type beyond the built-in ones (pyproject.toml, contract_types).

``acyclic_modules``: no import cycle between any two modules of the given packages, even
one that runs through several packages. import-linter's own ``acyclic_siblings`` only
sees cycles between the children of one package, so a loop such as
``annotator.adjudication.services -> audit.ledger.services -> metrics.selectors ->
audit.ledger.selectors -> annotator.adjudication.services`` would pass it. Imports
inside functions count like any other: a deferred import does not hide a cycle.

Never imported by the application; ``lint-imports`` loads it.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise

import grimp
from importlinter import Contract, ContractCheck, fields, output


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _cycle(start: str, members: set[str], edges: dict[str, set[str]]) -> list[str]:
    """The shortest cycle through ``start`` inside one component, as a list of modules."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(edges[node] & members):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if successor not in previous:
                previous[successor] = node
                queue.append(successor)
    return [start, start]  # not reached: every member of a component lies on a cycle


class AcyclicModulesContract(Contract):
    """No module of ``packages`` imports, directly or through other modules of them, a
    module that imports it back."""

    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        packages = tuple(self.packages)  # type: ignore[arg-type]
        inside = {
            module
            for module in graph.modules
            if any(module == p or module.startswith(p + ".") for p in packages)
        }
        edges = {
            module: graph.find_modules_directly_imported_by(module) & inside for module in inside
        }
        cycles = []
        for component in _strongly_connected(edges):
            path = _cycle(component[0], set(component), edges)
            lines = [
                [
                    (detail["line_number"], detail["line_contents"])
                    for detail in graph.get_import_details(importer=importer, imported=imported)
                ]
                for importer, imported in pairwise(path)
            ]
            cycles.append({"modules": component, "path": path, "lines": lines})
        output.verbose_print(verbose, f"Checked {len(inside)} modules for import cycles.")
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(
                f"{len(cycle['modules'])} modules import each other in a loop:", bold=True
            )
            output.new_line()
            path = cycle["path"]
            for importer, imported, details in zip(path, path[1:], cycle["lines"], strict=False):
                where = ", ".join(f"l.{line} {text}" for line, text in details)
                output.indent_cursor()
                output.print_error(f"{importer} -> {imported} ({where})", bold=False)
            output.new_line()
