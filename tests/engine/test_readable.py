"""Readable formulas: the rewrite rules, and that the printed text means the same formula."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from srh_engine import (
    Binary,
    Expression,
    Function,
    Number,
    ParseError,
    Symbol,
    Unary,
    integral_number,
    parse,
    readable,
    to_str,
)
from srh_engine.readability import is_positive

RULES = [
    ("plus-minus", "exp(-0.9189385332046727 + -0.5*theta**2.0)", (),
     "exp(-0.9189385332046727 - 0.5*theta**2)"),
    ("exp-of-log", "exp(log(n_0) - m*x*T**-1*g*kb**-1)", ("n_0",), "n_0*exp(-m*x*g/(T*kb))"),
    ("exp-of-log-unknown-sign", "exp(log(n_0) - m*x*T**-1*g*kb**-1)", (),
     "exp(log(n_0) - m*x*g/(T*kb))"),
    ("exp-minus-log", "exp(2*x - log(a))", ("a",), "exp(2*x)/a"),
    ("exp-of-log-only", "exp(log(a) + log(b))", ("a", "b"), "a*b"),
    ("exp-of-log-of-positive-product", "exp(log(2*a/b) + x)", ("a", "b"), "2*a*exp(x)/b"),
    ("exp-of-log-number", "exp(log(3) + x)", (), "3*exp(x)"),
    ("exp-of-log-negative-number-kept", "exp(log(-3) + x)", (), "exp(log(-3) + x)"),
    ("exp-of-scaled-log", "exp(2*log(a) + x)", ("a",), "a**2*exp(x)"),
    ("exp-of-log-over-number", "1/exp(log(sqrt(x**2*P**3))/3)", ("x", "P"),
     "1/(x**(1/3)*sqrt(P))"),
    ("exp-of-half-log", "exp(0.5*log(a))", ("a",), "sqrt(a)"),
    # an exp below the line is written above it with its argument negated
    ("exp-below-the-line", "n/exp(m*g*x/(k*T))", (), "n*exp(-m*g*x/(k*T))"),
    ("reciprocal-of-exp", "sin(1/exp(C/p))", (), "sin(exp(-C/p))"),
    ("exp-of-a-difference-below", "x/exp(a - b)", (), "x*exp(b - a)"),
    ("exps-joined", "exp(a)/(exp(b)*exp(c))", (), "exp(a - b - c)"),
    ("exp-in-a-sum-below", "n/(exp(a) + 1/exp(a))", (), "n/(exp(a) + exp(-a))"),
    ("sum-with-exp-below-kept", "x/(exp(a/b) - 1)", (), "x/(exp(a/b) - 1)"),
    ("exp-of-scaled-log-unknown-sign", "exp(2*log(a) + x)", (), "exp(2*log(a) + x)"),
    ("exp-of-log-times-name-kept", "exp(x*log(a))", ("a",), "exp(x*log(a))"),
    ("minus-log-of-quotient", "-nu*log(eps/x)/(4*pi*N)", (), "nu*log(x/eps)/(4*pi*N)"),
    ("negative-denominator-log", "T*log(n/n_0)/(-m*x)", (), "T*log(n_0/n)/(m*x)"),
    ("minus-log-of-name-kept", "-c*log(a)", (), "-c*log(a)"),
    ("minus-two-logs-kept", "-log(a/b)*log(c/d)", (), "-log(a/b)*log(c/d)"),
    ("negated-factor", "a*-b", (), "-a*b"),
    ("repeated-factor", "m*N*N/N**3", (), "m/N"),
    ("integer-power-of-quotient", "m/sqrt((1/v)**2 - (1/c)**2)", ("m", "v", "c"),
     "m*v/sqrt(1 - v**2/c**2)"),
    ("integer-power-of-signed-product", "(-2*a/b)**-2", (), "b**2/(4*a**2)"),
    ("square-root-of-exp", "1/(sqrt(exp(h*w/(pi*k*T))) - 1)", (), "1/(exp(h*w/(2*pi*k*T)) - 1)"),
    ("power-of-exp", "exp(x - y)**2", (), "exp(2*(x - y))"),
    ("irrational-power-of-exp", "exp(x)**0.123", (), "exp(0.123*x)"),
    ("repeated-sum-factor", "(a + 1)*(a + 1)*x", (), "(a + 1)**2*x"),
    ("negative-powers-divide", "3*x**-2.0*y", (), "3*y/x**2"),
    ("inverse", "x*inv(y + 1)", (), "x/(y + 1)"),
    ("quotient-of-quotient", "a/(b/c)", (), "a*c/b"),
    ("minus-one-coefficient", "-1*x + 2*y", (), "2*y - x"),
    ("positive-first", "-a + b", (), "b - a"),
    ("all-negative", "-a - 2*b", (), "-a - 2*b"),
    ("double-negative", "x - -y", (), "x + y"),
    ("negated-sum-kept", "-(x + y)", (), "-(x + y)"),
    ("negated-product", "-(m*x/T)", (), "-m*x/T"),
    ("unit-factors", "1*x/1*y**1", (), "x*y"),
    ("subtraction-kept", "a - (b - c)", (), "a - (b - c)"),
    ("plain-kept", "x*sin(y) + 2", (), "x*sin(y) + 2"),
    ("integral-additive-constant", "sqrt(1.0 - (s/h)**2.0)", (), "sqrt(1 - s**2/h**2)"),
    ("integral-leading-constant", "-1.0 + x", (), "x - 1"),
    ("integral-factor", "2.0*x*y", (), "2*x*y"),
    ("integral-product-of-factors", "2.0*x*3.0", (), "6*x"),
    ("integral-divisor", "x/4.0", (), "x/4"),
    ("integral-inside-functions", "sin(3.0*x) + exp(-2.0)", (), "sin(3*x) + exp(-2)"),
    ("integral-unit-factors-fold", "1.0*x/1.0*y*1.0", (), "x*y"),
    ("integral-minus-one-factor", "-1.0*x + y", (), "y - x"),
    ("plus-zero-folds", "x + 0.0", (), "x"),
    ("minus-zero-folds", "x - -0.0", (), "x"),
    ("zero-minus-folds", "0.0 - x*y", (), "-x*y"),
    ("fraction-kept", "1.5*x + 0.5", (), "1.5*x + 0.5"),
    ("fitted-near-integer-kept", "0.9999999*x + 2.0000001", (), "0.9999999*x + 2.0000001"),
    ("huge-integral-kept-float", "x + 1e+300", (), "x + 1e+300"),
    ("base-above-and-below-cancels", "x*y/x", (), "y"),
    ("powers-above-and-below-cancel", "x**2*y/x**3", (), "y/x"),
    # numbers of a sum that cancel once a number factor is taken into the sum it scales
    ("scaled-offset-cancels", "(1 + q/(e*r**2))/(4*pi) - 1/(4*pi)", (), "q/(4*e*r**2*pi)"),
    ("scaled-offset-cancels-negative", "(1 - x)*2 - 2", (), "-2*x"),
    ("scaled-offset-cancels-in-longer-sum", "y + (0.5 + x)*3 - 1.5", (), "y + 3*x"),
    ("scaled-offset-keeps-the-inner-sum", "(2 + x + y)*0.5 - 1", (), "0.5*(x + y)"),
    ("numbers-cancel", "-2 + (x + 2)", (), "x"),
    ("scaled-offset-not-cancelling-kept", "(1 + x)/(4*pi) - 2/(4*pi)", (),
     "(1 + x)/(4*pi) - 1/(2*pi)"),
    # terms that differ only in their number are one; leading numbers that divide reduce
    ("repeated-term-counted", "3*(u + u)**2*F**2*u/(4*R**2)", (), "3*u**3*F**2/R**2"),
    ("like-terms-merged", "2*u + u - y", (), "3*u - y"),
    ("like-terms-cancel", "a + b - a", (), "b"),
    ("halves-merged", "x/2 + x/2", (), "x"),
    ("numbers-that-divide-reduce", "2*x/(6*y)", (), "x/(3*y)"),
    ("numbers-that-do-not-divide-kept", "1.5*x/(3*y)", (), "1.5*x/(3*y)"),
    ("unlike-terms-kept", "x*y + x", (), "x*y + x"),
    ("named-constant-is-no-count", "pi*x + x", (), "pi*x + x"),
    ("like-terms-with-pi", "2*pi*x - pi*x", (), "pi*x"),
    # a root of a product: a fitted number's and exp's roots are taken, integers stay
    ("root-of-fitted-number-and-exp", "sqrt(2.25*a*exp(2/(s*M)))", ("a", "s", "M"),
     "1.5*exp(1/(s*M))*sqrt(a)"),
    ("root-of-fitted-number-any-sign", "sqrt(2.25*x*y)", (), "1.5*sqrt(x*y)"),
    ("root-of-integer-kept", "sqrt(2*a*b)", ("a", "b"), "sqrt(2*a*b)"),
    ("root-of-pi-kept", "sqrt(pi*a)", ("a",), "sqrt(pi*a)"),
    # a power of a power of a positive name is one power in one pass (it took two)
    ("power-of-power-of-power", "((x**2)**-2)**(1/3)", ("x",), "1/x**(4/3)"),
    ("offset-of-a-product-of-sums-kept", "(1 + x)*(2 + y) - 2", (), "(1 + x)*(2 + y) - 2"),
]

NUMBERS = [  # (id, formula, written): numbers a person folds; each checked for its values
    # the numbers of a (nested) sum are one, written last
    ("nested-sum-numbers-collected", "arcsin(a/(1.0 + (b + 2.0)))", "arcsin(a/(b + 3))"),
    ("numbers-with-pi-collected-to-integer", "arcsin(x1/(4*pi + (x2 - 7.5663706143591725)))",
     "arcsin(x1/(x2 + 5))"),
    ("numbers-added-as-written", "x + 0.1 + 0.2", "x + 0.3"),
    ("numbers-collected-fitted-kept", "x + 1.0000001 + 2", "x + 3.0000001"),
    ("numbers-collected-subtracted", "x + 3 - 1", "x + 2"),
    ("numbers-with-pi-exact-kept", "x + 2*pi + 1", "x + 2*pi + 1"),
    ("named-numbers-kept", "x + pi + e", "x + pi + e"),
    # a sum of quotients over one denominator is one quotient; numbers go into a sum
    ("reciprocal-of-sum-over-one-denominator", "1/(5*(1/x1 + 0.2*x2/x1))", "x1/(x2 + 5)"),
    ("halves-over-one-denominator", "x/2 + y/2", "(x + y)/2"),
    ("denominators-of-their-own-kept", "a/(b*c) - d/(3*c)", "a/(b*c) - d/(3*c)"),
    ("reciprocals-kept", "1/x + 1/y", "1/x + 1/y"),
    ("number-into-sum-kept-when-a-term-gains-one", "2*(x + y)", "2*(x + y)"),
    ("number-into-sum-kept-when-not-shorter", "0.5*(2 + x)", "0.5*(2 + x)"),
    ("number-into-sum-kept-when-written-longer", "3*(0.1*x + 1)", "3*(0.1*x + 1)"),
    ("number-into-sum-kept-beside-a-numberless-term", "(2*N - R + 2*N**2)*N/(2*R)",
     "(2*N - R + 2*N**2)*N/(2*R)"),
    ("sign-into-sum", "-d/(T1 - T2)", "d/(T2 - T1)"),
    ("sign-into-sum-kept-when-more-minus", "-(a*r**3 - a*d**3 + d**3 + 2*r**3)/v",
     "-(a*r**3 - a*d**3 + d**3 + 2*r**3)/v"),
    # a factor beside a sum goes in where it cancels a denominator and adds none
    ("factor-cancels-a-denominator-in-sum", "(1/c + a)*c**2", "(1 + a*c)*c"),
    ("divisor-of-every-term-into-sum", "(a*x + x**2)/x", "a + x"),
    ("factor-into-sum-adding-a-denominator-kept", "(F - E*q)/(q*v)", "(F - E*q)/(q*v)"),
    ("divisor-of-one-term-kept", "z*(2*y - z)/y", "z*(2*y - z)/y"),
    # a number times a sum is opened where a term then cancels, and only there
    ("scaled-sum-opened-where-a-term-cancels",
     "0.5*(x**2*m*w**2 + a*x**3*m*w**2/y - (-p**2/m - 2*w*p*x)) - w*p*x",
     "0.5*x**2*m*w**2 + 0.5*a*x**3*m*w**2/y + 0.5*p**2/m"),
    ("divided-sum-opened-where-a-term-cancels", "(a + 3*b)/3 - b + c", "a/3 + c"),
    ("scaled-sum-kept-when-nothing-cancels", "0.4*(a + 2*u) - u", "0.4*(a + 2*u) - u"),
    ("divided-sum-kept-when-longer", "(a - 2*b)/3 + b", "(a - 2*b)/3 + b"),
    ("scaled-sum-kept-when-a-fitted-term-is-left", "0.5*(a + 2.000001*u) - u",
     "0.5*(a + 2.000001*u) - u"),
    ("named-number-times-sum-kept", "pi*(a + b) - pi*b", "pi*(a + b) - pi*b"),
    # like terms' numbers added: a short decimal or a small fraction to rounding
    ("like-terms-short-decimal", "0.1*a + 0.2*a", "0.3*a"),
    ("like-terms-small-fraction", "a/3 + a/3", "2*a/3"),
    ("like-terms-fitted-sum-kept", "1.23456*x + x", "2.23456*x"),
    # a factor 0 is 0; a function of numbers with an integral value is that integer
    ("zeroed-number-folds", "(sqrt(cos(0*alpha))/cos(omega*t) + alpha)*cos(omega*t)**2*x1",
     "(1 + alpha*cos(omega*t))*cos(omega*t)*x1"),
    ("integral-function-values", "sqrt(4)*x + sin(0)", "2*x"),
    ("non-integral-function-value-kept", "exp(-2)*x", "exp(-2)*x"),
]

ROOTS = [  # (id, formula, written): powers that share a non-integral exponent, and the
    # exact exponents SymPy reads exactly (sqrt, 3/2), not as floats
    ("half-powers-merge", "gamma**0.5*pr**0.5/rho**0.5", "sqrt(gamma*pr/rho)"),
    ("negative-half-power-merges", "gamma**0.5*pr**0.5*rho**-0.5", "sqrt(gamma*pr/rho)"),
    ("square-roots-merge", "sqrt(gamma)*sqrt(pr)/sqrt(rho)", "sqrt(gamma*pr/rho)"),
    ("roots-in-denominator-merge", "x/(sqrt(y)*sqrt(z))", "x/sqrt(y*z)"),
    ("root-and-half-power-merge", "2*sqrt(a)*b**0.5*cos(t)", "2*sqrt(a*b)*cos(t)"),
    ("cube-roots-one-by-one", "r**(1/3)*s**(1/3)*x", "r**(1/3)*s**(1/3)*x"),
    ("three-halves-one-by-one", "a**1.5*b**1.5/c", "a**(3/2)*b**(3/2)/c"),
    ("same-base-powers-add", "x*x**0.5", "x**(3/2)"),
    ("same-base-roots-cancel", "a**0.5*y/sqrt(a)", "y"),
    ("number-leads-merged-root", "-2*x**0.5*y**-0.5", "-2*sqrt(x/y)"),
    ("half-power-is-sqrt", "2*x**0.5", "2*sqrt(x)"),
    ("negative-half-power-divides", "y*x**-0.5", "y/sqrt(x)"),
    ("half-power-of-sum", "(a + b)**0.5*c", "sqrt(a + b)*c"),
    ("exact-fraction-exponent", "x**0.3333333333333333*y", "x**(1/3)*y"),
    ("exact-three-halves", "6.283*d**1.5/(G*(m1 + m2))**0.5", "6.283*d**(3/2)/sqrt(G*(m1 + m2))"),
    ("exact-quarter", "x**-0.25", "1/x**(1/4)"),
    ("equal-fitted-exponents-kept", "x**0.333*y**0.333", "x**0.333*y**0.333"),
    # must not fire
    ("integral-powers-kept", "x**2*y**2/z**3", "x**2*y**2/z**3"),
    ("different-exponents-kept", "x**0.5*y**1.5", "sqrt(x)*y**(3/2)"),
    ("fitted-exponent-kept", "x**0.333*y", "x**0.333*y"),
    ("fitted-exponents-differ-kept", "x**0.333*y**0.3331", "x**0.333*y**0.3331"),
    ("near-half-kept", "x**0.5000001", "x**0.5000001"),
    ("symbolic-exponent-kept", "x**a*y**a", "x**a*y**a"),
    ("root-in-sum-not-merged", "sqrt(x) + sqrt(y)", "sqrt(x) + sqrt(y)"),
    # a root of a sum, a function or a number stays a factor of its own (SymPy, and so
    # SRBench's judge, does not split sqrt(x*(1 - v**2/c**2)) into the truth's two roots)
    ("root-of-sum-apart", "sqrt(x)*sqrt(1 - v**2/c**2)", "sqrt(x)*sqrt(1 - v**2/c**2)"),
    ("roots-of-sums-apart", "sqrt(a**2 + b**2)/sqrt(1 - v**2/c**2)",
     "sqrt(a**2 + b**2)/sqrt(1 - v**2/c**2)"),
    ("root-of-number-apart", "sqrt(x)/sqrt(2*pi)", "sqrt(x)/sqrt(2*pi)"),
    ("root-of-function-apart", "sqrt(x)*sqrt(sin(y))", "sqrt(x)*sqrt(sin(y))"),
    # roots of X + Y and X - Y are one root of X**2 - Y**2
    ("conjugate-roots-join", "m*sqrt(v/c + 1)*sqrt(1 - v/c)", "m*sqrt(1 - v**2/c**2)"),
    ("conjugate-roots-both-subtracted", "sqrt(2 - x)*sqrt(-x - 2)", "sqrt(x**2 - 4)"),
    ("conjugate-cube-roots-join", "(a + b)**(1/3)*(a - b)**(1/3)", "(a**2 - b**2)**(1/3)"),
    ("two-conjugate-pairs-join-in-one-pass", "(sqrt(1 + x)*sqrt(2 + y))*(sqrt(1 - x)*sqrt(2 - y))",
     "sqrt(1 - x**2)*sqrt(4 - y**2)"),
    ("roots-of-unrelated-sums-kept", "sqrt(1 + x)*sqrt(2 - x)", "sqrt(1 + x)*sqrt(2 - x)"),
    ("conjugate-roots-different-powers-kept", "sqrt(1 + x)*(1 - x)**(1/3)",
     "sqrt(1 + x)*(1 - x)**(1/3)"),
    ("roots-of-names-merge-beside-root-of-sum", "sqrt(x)*sqrt(1 + y)*sqrt(z)",
     "sqrt(x*z)*sqrt(1 + y)"),
    ("root-of-product-kept-without-signs", "(r*s)**(1/3)", "(r*s)**(1/3)"),
    # logs with one factor in a sum are one log (real only where a, b > 0)
    ("sum-of-logs", "p*log(a) + p*log(sin(a))", "p*log(a*sin(a))"),
    ("difference-of-logs", "x + log(v2) - log(v1)", "x + log(v2/v1)"),
    ("negated-logs", "x - log(a) - log(b)", "x - log(a*b)"),
    ("logs-over-a-factor", "log(a)/x + log(b)/x", "log(a*b)/x"),
    ("logs-with-other-factors-kept", "0.5*log(a) + 0.3*log(b)", "0.5*log(a) + 0.3*log(b)"),
    ("log-and-other-function-kept", "log(a) + exp(b)", "log(a) + exp(b)"),
    ("common-factor-kept-without-signs", "sqrt(a*v + a*x)", "sqrt(a*v + a*x)"),
    # roots of exact numbers go into a root of a sum where a term's numbers cancel
    ("roots-of-numbers-into-root-of-sum", "sqrt(8)*sqrt(pi)*sqrt(G*r - 3*a/(8*pi))/sqrt(3)",
     "sqrt(8*pi*G*r/3 - a)"),
    ("root-of-number-into-cube-root", "(x/2 - y)**(1/3)*2**(1/3)", "(x - 2*y)**(1/3)"),
    ("root-of-number-cancelling-none-kept", "sqrt(3)*sqrt(2*x + 3)", "sqrt(3)*sqrt(2*x + 3)"),
    ("root-of-number-adding-numbers-kept", "sqrt(x/2 - y)/sqrt(2)", "sqrt(x/2 - y)/sqrt(2)"),
    ("root-of-fitted-number-stays-out", "sqrt(1.5)*sqrt(x/1.5 - y)",
     "1.224744871391589*sqrt(x/1.5 - y)"),
]

POSITIVE_ROOTS = [  # (id, formula, positive names, written): rules that need positive names
    ("root-of-product-distributes", "(r*s)**(1/3)*x", ("r", "s"), "r**(1/3)*s**(1/3)*x"),
    ("root-of-quotient-merges-back", "(gamma*pr/rho)**0.5", ("gamma", "pr", "rho"),
     "sqrt(gamma*pr/rho)"),
    ("power-of-power", "(M**2)**(4/3)*x", ("M",), "M**(8/3)*x"),
    ("thirds-add-exactly", "(s*k/r)**-1*(M**2*s/g)**(4/3)*(g*r/(M*v))**(-2/3)",
     ("s", "k", "r", "M", "g", "v"), "r**(1/3)*M**(10/3)*s**(1/3)*v**(2/3)/(k*g**2)"),
    ("common-factor-out-of-root", "mu*a**0.5*(A*A*sqrt(a*V + x*a*m))", ("a",),
     "mu*a*A**2*sqrt(V + x*m)"),
    ("negative-common-factor-kept", "sqrt(a*V + a*x)", ("V",), "sqrt(a*V + a*x)"),
    ("positive-part-of-root-out", "(r*s)**(1/3)", ("r",), "r**(1/3)*s**(1/3)"),
    ("positive-part-of-root-over-sum-out", "sqrt(k/(1 - y**2/n**2))*x", ("k", "y", "n"),
     "sqrt(k)*x/sqrt(1 - y**2/n**2)"),
    ("root-over-sum-of-squares-apart", "sqrt(((z - q)**2 + (s - t)**2)/N)/x",
     ("z", "q", "s", "t", "N", "x"), "sqrt((z - q)**2 + (s - t)**2)/(sqrt(N)*x)"),
    ("root-of-name-times-positive-sum-kept", "d**1.5/sqrt(G*(m + M))", ("d", "G", "m", "M"),
     "d**(3/2)/sqrt(G*(m + M))"),
    ("roots-of-name-and-positive-sum-apart", "sqrt(G)*sqrt(m + M)", ("G", "m", "M"),
     "sqrt(G)*sqrt(m + M)"),
    ("signed-part-of-root-together", "(r*s*t)**(1/3)", ("r",), "r**(1/3)*(s*t)**(1/3)"),
    # a sum of reciprocals, one term added: that term (the largest where the root is real)
    # comes out whole, the rest are ratios to it
    ("reciprocal-sum-leading-term-out", "m/sqrt(1/v**2 - 1/c**2)", ("m", "v", "c"),
     "m*v/sqrt(1 - v**2/c**2)"),
    ("reciprocal-sum-cube-root", "c*(1/m**3 - 2/v)**(1/3)", ("m", "v", "c"),
     "c*(1 - 2*m**3/v)**(1/3)/m"),
    ("reciprocal-sum-leading-term-not-whole-kept", "sqrt(1/m - 1/v)", ("m", "v"),
     "sqrt(1/m - 1/v)"),
    ("reciprocal-sum-all-added-kept", "sqrt(1/v**2 + 1/c**2)*m", ("m", "v", "c"),
     "sqrt(1/v**2 + 1/c**2)*m"),
    ("reciprocal-sum-unknown-signs-kept", "m/sqrt(1/v**2 - 1/c**2)", ("m",),
     "m/sqrt(1/v**2 - 1/c**2)"),
    ("numerator-sum-kept", "sqrt(w**2/c**2 - pi**2/d**2)", ("w", "c", "d"),
     "sqrt(w**2/c**2 - pi**2/d**2)"),
    ("one-minus-ratio-kept", "m*v/sqrt(1 - v**2/c**2)", ("m", "v", "c"),
     "m*v/sqrt(1 - v**2/c**2)"),
    # that term also comes out where its root cancels the roots beside it
    ("leading-term-cancels-root-beside", "sqrt(a/B)*M/sqrt(a/B - B/a)", ("a", "B", "M"),
     "M/sqrt(1 - B**2/a**2)"),
    ("leading-term-cancels-root-within", "sqrt(r/((r/B - B/r)*B))*x", ("r", "B", "x"),
     "x/sqrt(1 - B**2/r**2)"),
    ("leading-term-not-cancelling-kept", "sqrt(a)*sqrt(a - B)", ("a", "B"),
     "sqrt(a)*sqrt(a - B)"),
    ("conjugate-roots-then-leading-term", "r/(N*sqrt(r/N + 1)*sqrt(r/N - 1))", ("r", "N"),
     "1/sqrt(1 - N**2/r**2)"),
    ("two-leading-terms-cancel-in-one-pass",
     "(sqrt(a/B)*sqrt(c/D))/(sqrt(a/B - B/a)*sqrt(c/D - D/c))", ("a", "B", "c", "D"),
     "1/(sqrt(1 - B**2/a**2)*sqrt(1 - D**2/c**2))"),
    ("leading-term-alone-kept", "x*sqrt(a/B - B/a)", ("a", "B", "x"), "x*sqrt(a/B - B/a)"),
    # a name beside a root of a sum with a subtracted number goes in where it cancels
    ("name-into-root-with-subtracted-number", "sqrt(w**2*d**2/c**2 - pi**2)/d",
     ("w", "d", "c"), "sqrt(w**2/c**2 - pi**2/d**2)"),
    ("name-into-root-minus-one", "w*sqrt(4*E/(m*w**2) - 1)", ("w", "E", "m"),
     "sqrt(4*E/m - w**2)"),
    ("name-beside-root-with-added-number-kept", "sqrt(w**2*d**2/c**2 + pi**2)/d",
     ("w", "d", "c"), "sqrt(w**2*d**2/c**2 + pi**2)/d"),
    ("name-not-cancelling-in-every-term-kept", "c/sqrt(m**2 - 2*c*v - 1)",
     ("c", "m", "v"), "c/sqrt(m**2 - 2*c*v - 1)"),
    ("name-in-fewer-terms-than-without-kept", "sqrt(a**2*x**2 - b**2 - 1)/x", ("a", "b", "x"),
     "sqrt(a**2*x**2 - b**2 - 1)/x"),
    ("name-beside-root-unknown-sign-kept", "sqrt(w**2*d**2/c**2 - pi**2)/d", ("w", "c"),
     "sqrt(w**2*d**2/c**2 - pi**2)/d"),
    # names that cancel a denominator go in, and names then written fewer times with them;
    # a term may hold other factors (a function, a sum) that do not hold the name
    ("names-cancelling-a-denominator-into-root", "c*sqrt(G*rho*d**2/c**2 - 3*a/(8*pi))/d",
     ("c", "d", "G", "rho", "a"), "sqrt(G*rho - 3*a*c**2/(8*pi*d**2))"),
    ("name-into-root-beside-function-term", "q/(d*e*sqrt(2*r**2/d**2 - 4*r*cos(a)/d + 2))",
     ("q", "d", "e", "r", "a"), "q/(e*sqrt(2*r**2 + 2*d**2 - 4*r*cos(a)*d))"),
    ("name-into-root-beside-sum-factor", "L*sqrt(2*(E - U)*m/L**2 - 1/r**2)",
     ("L", "E", "U", "m", "r"), "sqrt(2*(E - U)*m - L**2/r**2)"),
    ("name-into-cube-root", "c*(G*d/c**3 - a)**(1/3)", ("c", "G", "d", "a"),
     "(G*d - a*c**3)**(1/3)"),
    ("fitted-number-beside-root-stays-out", "2.5*sqrt(x**2/d**2 - 1)*d", ("x", "d"),
     "2.5*sqrt(x**2 - d**2)"),
    ("name-cancelling-a-numerator-only-kept", "sqrt(4*E/m - w**2*x**2)/x", ("E", "m", "w", "x"),
     "sqrt(4*E/m - w**2*x**2)/x"),
    ("name-beside-one-minus-ratio-kept", "c*w*sqrt(1 - v**2/c**2)", ("c", "w", "v"),
     "c*w*sqrt(1 - v**2/c**2)"),
    ("name-also-in-a-function-kept", "a*sqrt(x/a**2 - cos(a))", ("a", "x"),
     "a*sqrt(x/a**2 - cos(a))"),
    ("name-not-cancelling-power-kept", "x*sqrt(y/x**2 - z)*sqrt(x)", ("x", "y", "z"),
     "x**(3/2)*sqrt(y/x**2 - z)"),
    # a root of names joins a root of a sum whole when one of its names so cancels
    ("root-of-names-joins-root-of-sum", "2*pi*d**(3/2)/(sqrt(G*m1)*sqrt(m2/m1 + 1))",
     ("d", "G", "m1", "m2"), "2*pi*d**(3/2)/sqrt(G*(m2 + m1))"),
    ("roots-of-names-join-root-of-sum-as-one", "sqrt(G)*sqrt(m1)*sqrt(m2/m1 + 1)",
     ("G", "m1", "m2"), "sqrt(G*(m2 + m1))"),
    ("root-of-name-joins-root-with-signed-name", "sqrt(b/a - c)*sqrt(a)", ("a", "b"),
     "sqrt(b - c*a)"),
]


@pytest.mark.parametrize(("text", "positive", "expected"), [r[1:] for r in RULES],
                         ids=[r[0] for r in RULES])
def test_rewrite_rules(text: str, positive: tuple[str, ...], expected: str) -> None:
    assert to_str(readable(parse(text), positive)) == expected


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in NUMBERS],
                         ids=[r[0] for r in NUMBERS])
def test_number_rules(text: str, expected: str) -> None:
    """Each written form, no longer than the original, and its value where the original is
    real (points of both signs; numbers added in another order round apart near a zero of
    the sum, so to 1e-12 of the largest value)."""
    original = parse(text)
    written = readable(original)
    assert to_str(written) == expected
    assert sum(1 for _ in written.iter_preorder()) <= sum(1 for _ in original.iter_preorder())
    rng = np.random.default_rng(5)
    points = {name: rng.uniform(-3, 3, 400) for name in _names(original)}
    with np.errstate(all="ignore"):
        before = np.broadcast_to(original.evaluate(points), (400,))
        after = np.broadcast_to(parse(expected).evaluate(points), (400,))
    defined = np.isfinite(before)
    assert defined.sum() >= 20
    scale = 1e-12 * float(np.max(np.abs(before[defined])))
    assert np.allclose(after[defined], before[defined], rtol=1e-12, atol=scale)


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in ROOTS], ids=[r[0] for r in ROOTS])
def test_root_rules(text: str, expected: str) -> None:
    """Each written form, and its value where the original is real (on points of both signs:
    a merged root may be real where its factors are not, never the other way round)."""
    original = parse(text)
    written = readable(original)
    assert to_str(written) == expected
    rng = np.random.default_rng(3)
    points = {name: rng.uniform(-3, 3, 400) for name in _names(original)}
    _assert_same_where_defined(original, parse(expected), points)


@pytest.mark.parametrize(("text", "positive", "expected"), [r[1:] for r in POSITIVE_ROOTS],
                         ids=[r[0] for r in POSITIVE_ROOTS])
def test_root_rules_with_positive_names(text: str, positive: tuple[str, ...], expected: str
                                        ) -> None:
    """The written form, and the value where the original is real and the positive names
    are positive (the other names take both signs)."""
    original = parse(text)
    assert to_str(readable(original, positive)) == expected
    rng = np.random.default_rng(4)
    points = {name: rng.uniform(0.1, 3, 400) if name in positive else rng.uniform(-3, 3, 400)
              for name in _names(original)}
    _assert_same_where_defined(original, parse(expected), points)


@pytest.mark.parametrize("text", ["(L*sqrt(2*m*E/L**2 - 1/r**2))/m",
                                  "L*(sqrt(2*m*E/L**2 - 1/r**2)/m)",
                                  "L/m*sqrt(2*m*E/L**2 - 1/r**2)"])
def test_a_product_is_written_whatever_its_grouping(text: str) -> None:
    """A chain of ``*`` and ``/`` is written from all its factors at once, so the factors
    beside a root are weighed together however the chain was grouped."""
    written = to_str(readable(parse(text), ("L", "m", "E", "r")))
    assert written == "sqrt(2*m*E - L**2/r**2)/m"


def _assert_same_where_defined(original: Expression, written: Expression,
                                points: dict[str, np.ndarray]) -> None:
    """``written`` has the value of ``original`` at every point where that is real (and
    there are at least 20 such points among the 400)."""
    with np.errstate(all="ignore"):
        before = np.broadcast_to(original.evaluate(points), (400,))
        after = np.broadcast_to(written.evaluate(points), (400,))
    defined = np.isfinite(before)
    assert defined.sum() >= 20
    assert np.allclose(after[defined], before[defined], rtol=1e-12, atol=0.0)


def _names(expression: Expression) -> list[str]:
    """The names in a fixed order: the points drawn for them must not follow the string
    hashes of the process (a set's order gave a near-cancelling point to another name in
    some runs, and a rounding difference above the tolerance)."""
    return sorted({node.name for node in expression.iter_preorder()
                   if isinstance(node, Symbol)})


@pytest.mark.parametrize(("value", "expected"), [
    (1.0, 1), (2.0, 2), (-1.0, -1), (-0.0, 0), (0.5, 0.5), (1.5, 1.5), (0.9999999, 0.9999999),
    (1.0000000000000002, 1.0000000000000002), (2.0**53, 2**53), (2.0**54, 2.0**54), (3, 3)])
def test_integral_number_is_exact(value: float, expected: int | float) -> None:
    got = integral_number(value)
    assert got == expected and type(got) is type(expected)


def test_integral_numbers_become_ints_in_the_tree() -> None:
    tree = readable(parse("sqrt(1.0 - x) + 2.5"))
    numbers = [node.value for node in tree.iter_preorder() if isinstance(node, Number)]
    assert numbers == [1, 2.5] and [type(n) for n in numbers] == [int, float]


@pytest.mark.parametrize(("text", "positive", "expected"), [
    ("x", ("x",), True), ("x", (), False), ("exp(y)", (), True), ("2*x/y**3", ("x", "y"), True),
    ("x - y", ("x", "y"), False), ("x + 1", ("x",), True), ("-x", ("x",), False),
    ("sin(x)", ("x",), False), ("sqrt(x*y)", ("x", "y"), True), ("sqrt(x - y)", ("x", "y"), False),
    ("abs(x)", (), False)])
def test_is_positive(text: str, positive: tuple[str, ...], expected: bool) -> None:
    assert is_positive(parse(text), positive) is expected


NAMES = ("x0", "x1", "x2")
_leaves = st.one_of(st.sampled_from(NAMES).map(Symbol),
                    st.floats(-5, 5, allow_nan=False).filter(lambda v: abs(v) > 1e-3).map(Number),
                    st.sampled_from([-1, 1, 2, -2, 0.5]).map(Number))


def _tree(children: st.SearchStrategy[Expression]) -> st.SearchStrategy[Expression]:
    return st.one_of(
        st.builds(Binary, st.sampled_from(("+", "-", "*", "/")), children, children),
        st.builds(lambda base, power: Binary("**", base, Number(power)), children,
                  st.sampled_from([-2.0, -1, -1.0, 1, 2.0, 0.5, -0.5, 1.5, 1 / 3, 0.25])),
        st.builds(Unary, st.just("-"), children),
        st.builds(lambda name, argument: Function(name, (argument,)),
                  st.sampled_from(("exp", "log", "inv", "sin")), children))


readable_trees = st.recursive(_leaves, _tree, max_leaves=7)
POINTS = {name: np.random.default_rng(k).uniform(0.5, 2.0, 50) for k, name in enumerate(NAMES)}


def _parsed(text: str) -> Expression:
    try:
        return parse(text)
    except ParseError as error:  # constant parts beyond 1e300: ``1/log(1 - 1)**2``
        assert error.construct == "huge constant power", (text, error)
        assume(False)
        raise


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(readable_trees)
def test_readable_text_parses_back_to_the_same_values(expression: Expression) -> None:
    with np.errstate(all="ignore"):
        before = np.broadcast_to(expression.evaluate(POINTS), (50,))
        assume(np.all(np.isfinite(before)) and np.max(np.abs(before)) < 1e8)
        text = to_str(readable(expression, NAMES))
        after = np.broadcast_to(_parsed(text).evaluate(POINTS), (50,))
    scale = 1e-9 * (1.0 + np.max(np.abs(before)))
    assert np.allclose(after, before, rtol=1e-7, atol=scale), (to_str(expression), text)


SIGNED_POINTS = {name: np.random.default_rng(10 + k).uniform(-2.0, 2.0, 200)
                 for k, name in enumerate(NAMES)}


def _parts(node: Expression) -> list[Expression]:
    """Every subtree of ``node`` (itself included)."""
    children = [getattr(node, name) for name in ("left", "right", "operand") if hasattr(node, name)]
    children += list(getattr(node, "arguments", ()))
    return [node, *(part for child in children for part in _parts(child))]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(readable_trees)
@example(Binary("**", Function("log", (Binary("+", Number(1.0), Number(-1)),)), Number(-0.5)))
def test_readable_keeps_the_value_wherever_the_original_is_defined(expression: Expression
                                                                   ) -> None:
    """On points of both signs and without positive names: where the original and every
    part of it is finite the rewritten formula has its value (it may be defined at more
    points, not fewer). Parts count because NumPy gives a finite value past an infinite
    one (``log(0)**-0.5`` is ``(-inf)**-0.5 = 0``), which no rewrite need keep."""
    with np.errstate(all="ignore"):
        before = np.broadcast_to(expression.evaluate(SIGNED_POINTS), (200,))
        defined = np.isfinite(before) & (np.abs(before) < 1e8)
        for part in _parts(expression):
            defined &= np.isfinite(np.broadcast_to(part.evaluate(SIGNED_POINTS), (200,)))
        assume(defined.any())
        text = to_str(readable(expression))
        after = np.broadcast_to(_parsed(text).evaluate(SIGNED_POINTS), (200,))
    scale = 1e-9 * (1.0 + np.max(np.abs(before[defined])))
    assert np.allclose(after[defined], before[defined], rtol=1e-7, atol=scale), (
        to_str(expression), text)


@settings(max_examples=200, deadline=None)
@given(readable_trees)
@example(Binary("**", Binary("**", Number(-1), Number(-2.0)), Number(1.5)))
def test_readable_is_a_fixed_point(expression: Expression) -> None:
    once = to_str(readable(expression, NAMES))
    assert to_str(readable(_parsed(once), NAMES)) == once
