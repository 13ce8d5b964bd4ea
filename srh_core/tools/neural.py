"""``nd2`` and ``sr4mdl``: the reference's neural-guided search backends, optional.

Both are research code published as git repositories with trained
checkpoints, not pip packages: ND2 (NDformer-guided Monte Carlo tree search
for network dynamics, https://github.com/tsinghua-fib-lab/ND2) and SR4MDL
(MDLformer-guided search, https://github.com/tsinghua-fib-lab/SR4MDL). A
backend is installed when ``<NAME>_HOME`` names a clone (its marker file is
there), its checkpoint exists (``<NAME>_CHECKPOINT``, default
``$<NAME>_HOME/weights/checkpoint.pth``) and ``torch`` is importable; this
is checked without importing anything (:meth:`NeuralBackend.unavailable`),
as ``call_pysr`` checks PySR. When a backend is missing the tool is listed
as unavailable (``srh tool list``), is not offered to the model unless a run
asks for it, and a call answers ``ok=False`` with a
:class:`~srh_core.errors.BackendUnavailableError` that says how to install
it. Nothing is ever made up in its place.

When installed, the tool runs the backend's own search in this process and
the formula it returns is scored like any other (``sr4mdl``: parsed by the
engine and evaluated on the splits; ``nd2``: its graph formula and its own
metrics are reported, since the engine does not read ND2's graph operators).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import BackendUnavailableError, ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import DataTerm, FormulaTool
from srh_core.tools.polynomial import subsample_rows

SR4MDL_BINARY = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div"}
SR4MDL_UNARY = {"sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "neg": "Neg", "inv": "Inv",
                "log": "Log", "exp": "Exp", "square": "Pow2", "cube": "Pow3"}


@dataclass(frozen=True, slots=True)
class NeuralBackend:
    """Where an optional neural backend lives and how to tell that it is there.

    Attributes:
        name: The tool's name.
        title: The backend's name in messages.
        repository: The repository to clone.
        home_variable: Environment variable naming the clone.
        checkpoint_variable: Environment variable naming the checkpoint file.
        marker: A file at the clone's root that shows it is the right repository.
    """

    name: str
    title: str
    repository: str
    home_variable: str
    checkpoint_variable: str
    marker: str

    def home(self) -> Path | None:
        value = os.environ.get(self.home_variable)
        return Path(value).expanduser().resolve() if value else None

    def checkpoint(self) -> Path | None:
        value = os.environ.get(self.checkpoint_variable)
        if value:
            return Path(value).expanduser().resolve()
        home = self.home()
        return None if home is None else home / "weights" / "checkpoint.pth"

    def status(self) -> dict[str, Any]:
        """What is configured and found (JSON), for ``backend`` in results and for docs."""
        home, checkpoint = self.home(), self.checkpoint()
        return {"backend": self.name, "repository": self.repository,
                "environment_variable": self.home_variable,
                "root": None if home is None else str(home),
                "installed": bool(home and (home / self.marker).is_file()),
                "checkpoint": None if checkpoint is None else str(checkpoint),
                "checkpoint_available": bool(checkpoint and checkpoint.is_file()),
                "torch": importlib.util.find_spec("torch") is not None}

    def unavailable(self) -> str | None:
        """How to install the backend when something is missing here, else None."""
        status = self.status()
        if status["installed"] and status["checkpoint_available"] and status["torch"]:
            return None
        missing = [what for what, ok in (
            (f"a clone of {self.repository} named by {self.home_variable}", status["installed"]),
            (f"its trained checkpoint ({self.checkpoint_variable}, default "
             f"${self.home_variable}/weights/checkpoint.pth)", status["checkpoint_available"]),
            ("torch in this Python environment (pip install torch)", status["torch"]))
            if not ok]
        return (f"{self.title} is not installed here: it needs {'; '.join(missing)}. Clone the "
                f"repository, download its checkpoint as its README says, set "
                f"{self.home_variable}, and install its requirements. Use expression_search, "
                "call_sindy or evaluate_formula instead.")

    def require(self) -> Path:
        """The clone's root, on ``sys.path``; BackendUnavailableError when missing."""
        reason = self.unavailable()
        if reason is not None:
            raise BackendUnavailableError(reason, backend=self.name,
                                          repository=self.repository)
        home = self.home()
        assert home is not None  # unavailable() checked it
        if str(home) not in sys.path:
            sys.path.insert(0, str(home))
        return home


ND2 = NeuralBackend("nd2", "ND2", "https://github.com/tsinghua-fib-lab/ND2", "ND2_HOME",
                    "ND2_CHECKPOINT", "search.py")
SR4MDL = NeuralBackend("sr4mdl", "SR4MDL", "https://github.com/tsinghua-fib-lab/SR4MDL",
                       "SR4MDL_HOME", "SR4MDL_CHECKPOINT", "regressor.py")


def torch_device(variable: str) -> str:
    import torch

    return os.environ.get(variable) or ("cuda" if torch.cuda.is_available() else "cpu")


@BaseTool.register("sr4mdl")
class SR4MDLTool(FormulaTool):
    """SR4MDL: MDLformer-guided tree search (optional: a clone, a checkpoint and torch)."""

    @classmethod
    def availability(cls) -> str | None:
        """How to install SR4MDL when it is missing here, else None."""
        return SR4MDL.unavailable()

    def execute(self, binary_operators: list[str], unary_operators: list[str],
                x: list[str] | None = None, y: str | None = None, timeout: int = 60,
                maxsize: int = 30, max_samples: int = 500, n_iter: int = 100,
                show_diagnostics: bool = True) -> dict[str, Any]:
        """Search formulas with SR4MDL's MDLformer-guided Monte Carlo tree search.

        Like call_pysr: choose the operators you believe the formula needs.

        Args:
            binary_operators: Binary operators, from "+", "-", "*", "/".
            unary_operators: Unary operators (may be empty), from "sqrt", "sin", "cos",
                "neg", "inv", "log", "exp", "square", "cube".
            x: Inputs: names or expressions. Default: every numeric feature.
            y: Target variable or expression. Default: the target.
            timeout: Search time in seconds, 10 to 600.
            maxsize: Largest formula length, 5 to 100.
            max_samples: Training rows used (evenly subsampled when there are more), 20 to 5000.
            n_iter: Tree-search iterations, 1 to 10000.
            show_diagnostics: Add residual diagnostics.
        """
        home = SR4MDL.require()
        binary = self._operators("binary_operators", binary_operators, SR4MDL_BINARY, 1)
        unary = self._operators("unary_operators", unary_operators, SR4MDL_UNARY, 0)
        seconds = self.check_int("timeout", timeout, 10, 600)
        size = self.check_int("maxsize", maxsize, 5, 100)
        limit = self.check_int("max_samples", max_samples, 20, 5000)
        iterations = self.check_int("n_iter", n_iter, 1, 10000)
        target = self.target_term(y)
        inputs = self.input_terms(x, target)
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, 1, limit=limit)
        text = self._search(home, data.X[rows], data.y[rows], binary, unary, seconds, size,
                            iterations)
        try:
            formula = sr4mdl_expression(text, inputs)
        except engine.EngineError as error:
            return self.failed_evaluation(formula=text,
                                          reason=f"SR4MDL's formula is not readable: {error}")
        result = self.evaluate_formula(formula, target, show_diagnostics=show_diagnostics)
        result["backend"] = SR4MDL.status()
        return result

    def _operators(self, name: str, values: Any, allowed: dict[str, str], minimum: int
                   ) -> list[str]:
        if not isinstance(values, list) or len(values) < minimum or \
                any(value not in allowed for value in values):
            raise ToolArgumentError(f"The {name!r} parameter of sr4mdl must list at least "
                                    f"{minimum} of {list(allowed)}. Got {values!r:.80} instead.",
                                    parameter=name)
        return [allowed[value] for value in dict.fromkeys(values)]

    def _search(self, home: Path, X: np.ndarray, y: np.ndarray, binary: list[str],
                unary: list[str], seconds: int, size: int, iterations: int) -> str:
        """Run SR4MDL's search; the text of its best formula over x1..xn."""
        import time
        from types import SimpleNamespace

        bundled = home / "nd2py_package"
        if bundled.is_dir() and str(bundled) not in sys.path:
            sys.path.insert(0, str(bundled))
        import torch
        from sr4mdl.env import Tokenizer
        from sr4mdl.model import MDLformer
        from sr4mdl.search import MCTS4MDL

        device = torch_device("SR4MDL_DEVICE")
        state = torch.load(SR4MDL.checkpoint(), map_location=device, weights_only=False)
        options = SimpleNamespace(dropout=0.0, d_model=512, d_input=64, d_output=512,
                                  n_TE_layers=8, max_len=size, max_param=5, max_var=10,
                                  uniform_sample_number=len(y), device=device, use_SENet=True,
                                  use_old_model=False)
        model = MDLformer(options, state["xy_token_list"])
        model.load(state["xy_encoder"], state["xy_token_list"], strict=True)
        model.eval()
        search = MCTS4MDL(tokenizer=Tokenizer(-100, 100, 4, options.max_var), model=model,
                          n_iter=iterations, max_len=size, sample_num=len(y), binary=binary,
                          unary=unary, leaf=[1.0, 2.0, float(np.pi)], keep_vars=True,
                          normalize_y=False, normalize_all=False, remove_abnormal=True,
                          train_eval_split=0.25, random_state=0)
        started = time.monotonic()
        search.fit({f"x{i + 1}": X[:, i] for i in range(X.shape[1])}, y, use_tqdm=False,
                   early_stop=lambda r2, *_: r2 > 0.99999
                   or time.monotonic() - started >= seconds)
        if search.eqtree is None:
            raise RuntimeError("SR4MDL ended without a formula.")
        return str(search.eqtree.to_str())


def sr4mdl_expression(text: str, inputs: list[DataTerm]) -> engine.Expression:
    """Parse SR4MDL's formula text, mapping its x1..xn back to the input expressions.

    Raises:
        engine.EngineError: The text is not a formula the engine accepts.
    """
    symbols = {f"x{i + 1}": term.expression for i, term in enumerate(inputs)}
    return engine.parse(text, symbols=symbols)


@BaseTool.register("nd2")
class ND2Tool(BaseTool):
    """ND2: NDformer-guided search for network dynamics (optional: a clone, a checkpoint, torch)."""

    @classmethod
    def availability(cls) -> str | None:
        """How to install ND2 when it is missing here, else None."""
        return ND2.unavailable()

    def execute(self, vars_node: list[str] | None = None, vars_edge: list[str] | None = None,
                y: str | None = None, root_type: str = "node", timeout: int = 60,
                episode_limit: int = 10000, beam_size: int = 10) -> dict[str, Any]:
        """Search a network-dynamics formula with ND2 (data: adjacency A or edge list G).

        Args:
            vars_node: Node variables, shaped (time, node). Default: every such variable.
            vars_edge: Edge variables, shaped (time, edge). Default: every such variable.
            y: Target variable, shaped (time, node) or (time, edge). Default: the target.
            root_type: "node" or "edge": what the target is defined on.
            timeout: Search time in seconds, 10 to 3600.
            episode_limit: Tree-search episodes, 1 to 1000000.
            beam_size: Expansions kept per step, 1 to 100.
        """
        ND2.require()
        if root_type not in ("node", "edge"):
            raise ToolArgumentError(f"The 'root_type' parameter of nd2 must be 'node' or "
                                    f"'edge'. Got {root_type!r} instead.", parameter="root_type")
        data = graph_arrays(self.context.data)
        target = y or self.context.target
        if target not in data:
            raise ToolArgumentError(f"nd2: the target {target!r} is not in the data.",
                                    parameter="y")
        nodes, edges = data["A"].shape[0], data["G"].shape[0]
        taken = {"A", "G", target}
        vars_node = vars_node if vars_node is not None else [
            name for name, value in data.items() if name not in taken
            and value.shape[-1:] == (nodes,)]
        vars_edge = vars_edge if vars_edge is not None else [
            name for name, value in data.items() if name not in taken | set(vars_node)
            and value.shape[-1:] == (edges,)]
        missing = [name for name in [*vars_node, *vars_edge] if name not in data]
        if missing:
            raise ToolArgumentError(f"nd2: {missing} are not in the data.", parameter="vars_node")
        found = self._search(data, target, vars_node, vars_edge, root_type,
                             self._int("timeout", timeout, 10, 3600),
                             self._int("episode_limit", episode_limit, 1, 1_000_000),
                             self._int("beam_size", beam_size, 1, 100))
        return {"formula": found["formula"], "target": target, "is_candidate": False,
                "method": "ND2", "backend_metrics": found["metrics"], "backend": ND2.status(),
                "warnings": ["ND2's graph operators (aggr, sour, targ) are not engine syntax: "
                             "rewrite the formula for evaluate_formula to score it"]}

    def _int(self, name: str, value: Any, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ToolArgumentError(f"The {name!r} parameter of nd2 must be an int in [{low}, "
                                    f"{high}]. Got {value!r} instead.", parameter=name)
        return value

    def _search(self, data: dict[str, np.ndarray], target: str, vars_node: list[str],
                vars_edge: list[str], root_type: str, seconds: int, episodes: int,
                beam: int) -> dict[str, Any]:
        """Run ND2's search; its formula text and its own metrics."""
        from ND2.GDExpr import GDExpr
        from ND2.model import NDformer
        from ND2.search import MCTS
        from ND2.search.reward_solver import RewardSolver

        inputs = {"Xv": {name: data[name] for name in vars_node},
                  "Xe": {name: data[name] for name in vars_edge},
                  "A": data["A"], "G": data["G"], "Y": data[target]}
        model = NDformer(device=torch_device("ND2_DEVICE"))
        model.load(ND2.checkpoint(), weights_only=False)
        model.eval()
        model.set_data(**inputs, root_type=root_type, cache_data_emb=True)
        search = MCTS(rewarder=RewardSolver(**inputs, mask=None), ndformer=model,
                      vars_node=vars_node, vars_edge=vars_edge, binary=list(ND2_BINARY),
                      unary=list(ND2_UNARY), beam_size=beam, max_coeff_num=5,
                      use_random_simulate=False, log_per_episode=100, log_per_second=10)
        search.fit([root_type], episode_limit=episodes, time_limit=seconds)
        if not search.best_model:
            raise RuntimeError("ND2 ended without a formula.")
        metrics = {str(k): float(v) for k, v in dict(search.best_metric).items()}
        return {"formula": str(GDExpr.prefix2str(search.best_model)), "metrics": metrics}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The formula ND2 found and its own metrics."""
        metrics = ", ".join(f"{k}={v:.6g}" for k, v in result["backend_metrics"].items())
        return (f"ND2 found: {result['target']} = {result['formula']}\nND2's metrics: {metrics}"
                f"\nNote: {result['warnings'][0]}")


ND2_BINARY = ("add", "sub", "mul", "div", "pow", "regular")
ND2_UNARY = ("neg", "abs", "inv", "exp", "logabs", "sin", "cos", "tan", "sqrtabs", "pow2",
             "pow3", "tanh", "sigmoid", "aggr", "sour", "targ")


def graph_arrays(data: Any) -> dict[str, np.ndarray]:
    """The context's arrays with both an adjacency ``A`` and an edge list ``G`` (one is derived
    from the other).

    Raises:
        ToolArgumentError: The data has neither.
    """
    arrays = {name: np.asarray(value) for name, value in data.items()}
    if "A" not in arrays and "G" not in arrays:
        raise ToolArgumentError("nd2 needs a graph: an adjacency matrix 'A' or an edge list "
                                "'G' in the data.", parameter="vars_node")
    if "G" not in arrays:
        arrays["G"] = np.stack(np.nonzero(arrays["A"]), axis=-1)
    arrays["G"] = arrays["G"].astype(int)
    if "A" not in arrays:
        count = int(arrays["G"].max()) + 1
        arrays["A"] = np.zeros((count, count), dtype=int)
        arrays["A"][arrays["G"][:, 0], arrays["G"][:, 1]] = 1
    arrays["A"] = arrays["A"].astype(int)
    return arrays
