"""Build budgets and option validation: expansion bombs fail fast with a clear ValueError and
little memory, models exactly at a budget build, and RuntimeSessionOptions refuses values out
of range where they are set (docs/errors.md, docs/threading.md)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime

DOMAIN = "test.bomb"
IMPORTS = [helper.make_opsetid("", 23), helper.make_opsetid(DOMAIN, 1)]


def info(name, elem=TensorProto.FLOAT, shape=(1,)):
    return helper.make_tensor_value_info(name, elem, list(shape))


def model_with(nodes, functions, inputs=("x",)):
    elems = {"x": TensorProto.FLOAT, "cond": TensorProto.BOOL}
    shapes = {"x": [1], "cond": []}
    graph = helper.make_graph(nodes, "main", [info(n, elems[n], shapes[n]) for n in inputs], [info("y")])
    model = helper.make_model(graph, opset_imports=IMPORTS, functions=functions)
    model.ir_version = 10
    return model.SerializeToString()


def doubling_bomb(levels):
    """y = f<levels>(x), f0 = Neg, fk = f(k-1)(f(k-1)(x)): 1 + 3 * 2**levels - 2 nodes expanded."""
    functions = [helper.make_function(DOMAIN, "f0", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], IMPORTS)]
    for k in range(1, levels + 1):
        functions.append(helper.make_function(
            DOMAIN, f"f{k}", ["x"], ["y"],
            [helper.make_node(f"f{k - 1}", ["x"], ["a"], domain=DOMAIN),
             helper.make_node(f"f{k - 1}", ["a"], ["y"], domain=DOMAIN)], IMPORTS))
    return model_with([helper.make_node(f"f{levels}", ["x"], ["y"], domain=DOMAIN)], functions)


def if_fan_out(levels):
    """y = g<levels>(cond, x), gk = If(cond, then: g(k-1), else: g(k-1)): two subgraphs a level."""
    functions = [helper.make_function(DOMAIN, "g0", ["cond", "x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], IMPORTS)]
    for k in range(1, levels + 1):
        def branch(name, k=k):
            return helper.make_graph([helper.make_node(f"g{k - 1}", ["cond", "x"], ["t"], domain=DOMAIN)], name, [],
                                     [info("t")])
        functions.append(helper.make_function(
            DOMAIN, f"g{k}", ["cond", "x"], ["y"],
            [helper.make_node("If", ["cond"], ["y"], then_branch=branch("then"), else_branch=branch("else"))], IMPORTS))
    return model_with([helper.make_node(f"g{levels}", ["cond", "x"], ["y"], domain=DOMAIN)], functions,
                      inputs=("cond", "x"))


def nested_calls(depth):
    """y = h1(x), hk = h(k+1), h<depth> = Neg: function bodies `depth` levels deep."""
    functions = [helper.make_function(DOMAIN, f"h{k}", ["x"], ["y"],
                                      [helper.make_node(f"h{k + 1}", ["x"], ["y"], domain=DOMAIN)], IMPORTS)
                 for k in range(1, depth)]
    functions.append(helper.make_function(DOMAIN, f"h{depth}", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])],
                                          IMPORTS))
    return model_with([helper.make_node("h1", ["x"], ["y"], domain=DOMAIN)], functions)


def options(**kwargs):
    return runtime.RuntimeSessionOptions(num_threads=1, **kwargs)


def test_a_doubling_function_bomb_fails_fast_with_a_clear_error():
    with pytest.raises(ValueError) as error:
        runtime.RuntimeSession(doubling_bomb(30))
    message = str(error.value)
    assert "more than max_expanded_nodes = 1000000" in message
    assert "max_expanded_nodes=" in message  # the Python option that raises it
    assert "in function 'test.bomb::f" in message and "in the main graph" in message


def test_a_doubling_function_bomb_needs_little_memory():
    # In a fresh interpreter, so the process peak measures this build alone. Compiling the bomb
    # took 2.5 GB or killed the process before; now the walk refuses it without compiling.
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import onnx_light.runtime as runtime
        from test_build_budget import doubling_bomb
        model = doubling_bomb(30)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            runtime.RuntimeSession(model)
        except ValueError:
            pass
        else:
            sys.exit("the bomb built")
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    grown_kb = int(done.stdout.strip().splitlines()[-1])
    assert grown_kb < 32 * 1024


def test_an_if_fan_out_through_functions_fails_fast():
    with pytest.raises(ValueError, match=r"more than max_subgraphs = 100000.*max_subgraphs="):
        runtime.RuntimeSession(if_fan_out(30))
    with pytest.raises(ValueError, match="more than max_expanded_nodes"):
        runtime.RuntimeSession(if_fan_out(30), options(max_subgraphs=2**62))


def test_models_exactly_at_each_budget_build():
    exact_nodes = 1 + 3 * 2**10 - 2
    session = runtime.RuntimeSession(doubling_bomb(10), options(max_expanded_nodes=exact_nodes))
    out = session.run(runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23))),
                      {"x": np.array([2.5], np.float32)})
    np.testing.assert_array_equal(np.asarray(out["y"]), [2.5])  # Neg 1024 times
    with pytest.raises(ValueError, match=f"compile {exact_nodes} nodes"):
        runtime.RuntimeSession(doubling_bomb(10), options(max_expanded_nodes=exact_nodes - 1))

    exact_subgraphs = 2 * (2**6 - 1)
    runtime.RuntimeSession(if_fan_out(6), options(max_subgraphs=exact_subgraphs))
    with pytest.raises(ValueError, match=f"compile {exact_subgraphs} subgraphs"):
        runtime.RuntimeSession(if_fan_out(6), options(max_subgraphs=exact_subgraphs - 1))

    runtime.RuntimeSession(nested_calls(64))  # the default depth budget
    with pytest.raises(ValueError, match="65 levels deep.*max_nesting_depth = 64"):
        runtime.RuntimeSession(nested_calls(65))
    runtime.RuntimeSession(nested_calls(65), options(max_nesting_depth=65))


def test_a_recursive_function_is_refused():
    functions = [helper.make_function(DOMAIN, "ping", ["x"], ["y"], [helper.make_node("pong", ["x"], ["y"], domain=DOMAIN)], IMPORTS),
                 helper.make_function(DOMAIN, "pong", ["x"], ["y"], [helper.make_node("ping", ["x"], ["y"], domain=DOMAIN)], IMPORTS)]
    with pytest.raises(ValueError, match="function 'test.bomb::ping' calls itself"):
        runtime.RuntimeSession(model_with([helper.make_node("ping", ["x"], ["y"], domain=DOMAIN)], functions))


@pytest.mark.parametrize("name,bad,good", [
    ("num_threads", [-1, 1025, 5000, 2**31 - 1], [0, 1, 1024]),
    ("persistent_tensor_initial_capacity", [-1, 2**24 + 1], [0, 2**24]),
    ("max_expanded_nodes", [0, -3], [1, 2**62]),
    ("max_nesting_depth", [-1, 1025], [0, 1024]),
    ("max_subgraphs", [-1], [0, 2**40]),
])
def test_options_out_of_range_are_a_value_error_where_they_are_set(name, bad, good):
    for value in bad:
        with pytest.raises(ValueError, match=f"RuntimeSessionOptions.{name} must be in"):
            runtime.RuntimeSessionOptions(**{name: value})
        opts = runtime.RuntimeSessionOptions()
        before = getattr(opts, name)
        with pytest.raises(ValueError, match=name):
            setattr(opts, name, value)
        assert getattr(opts, name) == before
    for value in good:
        assert getattr(runtime.RuntimeSessionOptions(**{name: value}), name) == value
        opts = runtime.RuntimeSessionOptions()
        setattr(opts, name, value)
        assert getattr(opts, name) == value


def test_option_defaults():
    opts = runtime.RuntimeSessionOptions()
    assert (opts.max_expanded_nodes, opts.max_nesting_depth, opts.max_subgraphs) == (1_000_000, 64, 100_000)
    assert opts.num_threads == 0 and opts.persistent_tensor_initial_capacity == 32
