"""A custom evaluator's source as a user writes one (context.evaluator/*.py, --evaluator)."""

MAX_ERROR_EVALUATOR = '''
import numpy as np
from srh_core.evaluator import DefaultEvaluator


class MaxErrorEvaluator(DefaultEvaluator):
    @classmethod
    def evaluate(cls, f, y, context):
        metrics = super().evaluate(f, y, context)
        metrics["max_abs_error"] = float(2 * np.sqrt(metrics["mse"]))
        return metrics
'''
