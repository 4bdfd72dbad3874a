"""Connecting the scripts to Ray: a local Ray started in-process by default, or a running cluster.

``ray_session(address)`` is the one way ``train_rllib`` and ``tournament --ray`` start or join
Ray, and it always leaves Ray as it found it (``ray.shutdown()`` on the way out, also on
errors), and the caller's global random state too (Python's ``random``, which Ray's start and
shutdown draw from; NumPy's global state Ray leaves alone)::

    with ray_session(None, num_cpus=2) as ray:       # a local Ray on 127.0.0.1, stopped after
        ...
    with ray_session("127.0.0.1:6379") as ray:       # a head started with `ray start --head`
        ...

``address``:

* ``None`` or ``"local"``: start a Ray in this process, bound to the loopback address only
  (127.0.0.1), with ``num_cpus`` CPUs (default: all), and stop it at the end.
* ``"auto"``: the cluster started with ``ray start`` on this machine (Ray finds its address).
* ``"HOST:PORT"`` (a head node's GCS port, 6379 by default) or ``"ray://HOST:PORT"`` (Ray Client).

An explicit address is first checked with a plain TCP connection (``timeout_s``), then joined
in a child process that must answer within ``timeout_s``, so an address that is wrong, closed or
not a Ray head fails with :class:`RayConnectError` in bounded time and nothing is left running;
only then does this process join. Ray's own clients would otherwise retry for minutes.

Ray is an optional dependency (the ``scale`` extra): without it, :class:`RayMissingError` says so
in one line. The cluster's nodes need this package installed (e.g.
``pip install -c constraints.txt -e ".[scale]"`` in the same environment on every node).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import socket
import subprocess
import sys

from agents.rllib import RAY_MISSING, RayMissingError

__all__ = ["RAY_MISSING", "RayConnectError", "RayMissingError", "parse_address", "ray_session"]

#: What a child process runs to check that an address is a Ray cluster it can join.
_PROBE = (
    "import sys, ray\n"
    "ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False)\n"
    "print(int(ray.cluster_resources().get('CPU', 0)))\n"
    "ray.shutdown()\n"
)
_LOOPBACK_NAMES = {"localhost"}
_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray keeps a loopback address as is


class RayConnectError(ConnectionError):
    """The address given is not a Ray cluster this process can join (message says why)."""


def parse_address(address: str | None) -> tuple[str, str | None, int | None]:
    """Check an ``--address`` value and split it.

    Returns:
        ("local", None, None), ("auto", None, None) or (the address as given, host, port).

    Raises:
        ValueError: not None, "local", "auto", "HOST:PORT" or "ray://HOST:PORT" with a port
            1-65535.
    """
    if address is None or address == "local":
        return "local", None, None
    if address == "auto":
        return "auto", None, None
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"address must be 'local', 'auto' or HOST:PORT, got {address!r}")
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = rest.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(
            f"address must be 'local', 'auto', HOST:PORT or ray://HOST:PORT (port 1-65535), "
            f"got {address!r}"
        )
    return address, host, int(port)


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine's loopback interface (127.0.0.0/8, ::1, localhost)."""
    if host is None:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _keep_to_loopback(ray_module=None) -> None:
    # Ray replaces a loopback address by the machine's network address (so that other nodes
    # could reach it) unless multi-node clusters are off; a local Ray and a loopback head are
    # meant to stay on 127.0.0.1. The environment variable is read when Ray is imported (and
    # by the processes Ray starts); the constant covers a Ray imported before this call.
    os.environ[_CLUSTER_ENV] = "0"
    if ray_module is not None:
        ray_module._private.ray_constants.ENABLE_RAY_CLUSTER = False


def _check_reachable(address: str, host: str, port: int, timeout_s: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as err:
        reason = (f"no answer within {timeout_s:g} s" if isinstance(err, TimeoutError)
                  else (err.strerror or str(err)).lower())
        raise RayConnectError(
            f"address {address!r}: cannot reach a Ray head there ({reason}); start one with "
            "`ray start --head` or check the address"
        ) from None


def _probe(address: str, loopback: bool, timeout_s: float) -> int:
    env = dict(os.environ)
    if loopback:
        env[_CLUSTER_ENV] = "0"
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, address], env=env,
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RayConnectError(
            f"address {address!r}: something listens there but no Ray cluster answered within "
            f"{timeout_s:g} s (is it a Ray head's GCS port, 6379 by default?)"
        ) from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        hint = ""
        if "auth" in proc.stderr.lower() and "token" in proc.stderr.lower():
            hint = (" (the cluster uses token authentication: set RAY_AUTH_MODE=token and its "
                    "token, RAY_AUTH_TOKEN or ~/.ray/auth_token)")
        raise RayConnectError(f"address {address!r}: cannot join the Ray cluster: {last}{hint}")
    try:
        return int(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


@contextlib.contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None,
                timeout_s: float = 30.0):
    """Start or join Ray for the ``with`` block and shut it down after (module docstring).

    Args:
        address: None / "local", "auto", "HOST:PORT" or "ray://HOST:PORT".
        num_cpus: CPUs of a local Ray (ignored when joining a cluster); None = all.
        timeout_s: bound of the reachability check and of the test join, > 0.

    Yields:
        the ``ray`` module, initialised.

    Raises:
        RayMissingError: Ray is not installed (names the ``scale`` extra).
        ValueError: a malformed address, num_cpus or timeout.
        RayConnectError: the address cannot be reached or is not a Ray cluster; Ray is not
            left initialised.
    """
    kind, host, port = parse_address(address)
    if num_cpus is not None and (isinstance(num_cpus, bool) or not isinstance(num_cpus, int)
                                 or num_cpus < 1):
        raise ValueError(f"num_cpus must be None or an integer >= 1, got {num_cpus!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    loopback = kind == "local" or is_loopback(host)
    with _global_random_kept():
        ray, saved_env, saved_flag = _open(kind, address, host, port, num_cpus, loopback,
                                           timeout_s)
    try:
        yield ray
    finally:
        with _global_random_kept():
            ray.shutdown()
            _restore(ray, saved_env, saved_flag)


@contextlib.contextmanager
def _global_random_kept():
    # Ray's start and shutdown draw from Python's global random (ray-project/ray#10145): the
    # caller's seeded draws go on as if Ray had never run (NumPy's global state Ray leaves alone)
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


def _open(kind, address, host, port, num_cpus, loopback, timeout_s):
    """Start or join Ray; (ray, the saved environment variable, the saved cluster flag)."""
    saved_env = os.environ.get(_CLUSTER_ENV)
    if loopback:
        _keep_to_loopback()
    try:
        ray = _import_ray()
    except RayMissingError:
        _restore(None, saved_env)
        raise
    saved_flag = ray._private.ray_constants.ENABLE_RAY_CLUSTER
    if ray.is_initialized():
        _restore(None, saved_env)
        raise RuntimeError("Ray is already initialised in this process; call ray.shutdown() first")
    if loopback:
        _keep_to_loopback(ray)
    try:
        _start(ray, kind, address, host, port, num_cpus, loopback, timeout_s)
    except BaseException:
        _restore(ray, saved_env, saved_flag)
        raise
    return ray, saved_env, saved_flag


def _import_ray():
    # Ray alone: RLlib (a script that needs it checks it with agents.rllib.require_ray) would add
    # about 7 s of CPU to every start, a tournament's Ray tasks do not use it
    try:
        import ray
    except ImportError as err:
        raise RayMissingError(RAY_MISSING) from err
    return ray


def _restore(ray, saved_env, saved_flag=None) -> None:
    if saved_env is None:
        os.environ.pop(_CLUSTER_ENV, None)
    else:
        os.environ[_CLUSTER_ENV] = saved_env
    if ray is not None and saved_flag is not None:
        ray._private.ray_constants.ENABLE_RAY_CLUSTER = saved_flag


def _start(ray, kind, address, host, port, num_cpus, loopback, timeout_s) -> None:
    if kind == "local":
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report from a local run
        try:
            # quiet: errors only (the notice that token authentication is on does not concern a
            # Ray bound to 127.0.0.1), and the workers' output stays in Ray's log files (their
            # errors still reach this process, with their tracebacks)
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                     _node_ip_address="127.0.0.1", logging_level="ERROR", log_to_driver=False)
        except BaseException:
            ray.shutdown()  # stop whatever part of the local Ray had started
            raise
    else:
        if host is not None:
            _check_reachable(address, host, port, timeout_s)
        _probe(address, loopback, timeout_s)
        try:
            ray.init(address=address, logging_level="WARNING")
        except Exception as err:  # noqa: BLE001 - whatever Ray raised, say which address
            ray.shutdown()
            raise RayConnectError(
                f"address {address!r}: cannot join the Ray cluster: {err}") from err
