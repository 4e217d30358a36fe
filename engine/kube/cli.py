"""``python -m engine.kube serve|plan`` (also the ``scalelab-kube`` console script).

``serve`` runs the scheduler daemon against a cluster (in-cluster ServiceAccount, or ``--kube-config``);
``plan --nodes nodes.json --pods pods.json`` prints where each Pending pod of ``kubectl`` dumps would go,
``--explain POD`` the full nodes x priorities breakdown of one of them. Bad input prints one line naming
the file or option, the object and field and what is allowed, and exits with code 2.
"""

from __future__ import annotations

import argparse
import logging
import math
import signal
import sys
import threading
from pathlib import Path

import pandas as pd
import yaml

from engine.cluster.importers.kube import KubeObjectError
from engine.core.inputs import InputError
from engine.core.params import ParamError
from engine.kube.explain import explain_table, failure_message, legend, score_summary
from engine.kube.options import describe, scheduler_params
from engine.kube.plan import format_table, plan
from engine.scheduling.params import SchedulerParams

DEFAULT_KUBECONFIG = "~/.kube/config"


def _scheduler_arguments(parser: argparse.ArgumentParser, scheduler_name_default: str | None) -> None:
    """The options ``serve`` and ``plan`` share: which pods, and the scheduler's weights and mode (the seed's)."""
    parser.add_argument(
        "-s",
        "--scheduler-name",
        default=scheduler_name_default if scheduler_name_default is not None else "None",
        help="place only pods whose spec.schedulerName is this; 'None' disables the check (a scheduler replacing kube-scheduler)"
        + f" (default: {scheduler_name_default or 'None'})",
    )
    parser.add_argument(
        "-n", "--namespace", default=None, help="place only pods of this namespace (capacity is counted from every namespace)"
    )
    parser.add_argument(
        "-w",
        "--weights",
        default=None,
        help="a list of floats: the weights of the five Skippy priorities (BalancedResource, LatencyAwareImageLocality, LocalityType,"
        " DataLocality, Capability), or of BalancedResource and ImageLocality with --use-default, e.g. '[1, 2, 1, 1, 1]'",
    )
    parser.add_argument(
        "-u",
        "--use-default",
        action="store_true",
        help="use the seed's default-scheduler priorities instead of Skippy's: BalancedResource and ImageLocality",
    )
    parser.add_argument(
        "--mode",
        choices=["skippy", "kube"],
        default="skippy",
        help="scoring rules: skippy (edgerun-skippy-core, 0-10) or kube (current kube-scheduler, 0-100) (default: skippy)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other scheduler parameter, e.g. weight_least_allocated=1 or percentage_of_nodes_to_score=50 (repeatable)",
    )
    parser.add_argument("-d", "--debug", action="store_true", help="debug logs")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m engine.kube",
        description="Skippy - Navigating functions to the edge of the world (i.e. K8s), on scalelab's scheduler.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve", help="run as a Kubernetes scheduler: watch pods and nodes, bind pods, record Events")
    _scheduler_arguments(serve, "skippy-scheduler")
    serve.add_argument(
        "-c",
        "--kube-config",
        nargs="?",
        const=DEFAULT_KUBECONFIG,
        default=None,
        metavar="PATH",
        help=f"load a kubeconfig (its current context; PATH defaults to {DEFAULT_KUBECONFIG}) instead of the in-cluster ServiceAccount",
    )
    serve.add_argument("--dry-run", action="store_true", help="decide and log where each pod would go; bind nothing, record no Event")
    serve.add_argument("--bind-address", default="0.0.0.0", help="address of the /healthz and /readyz probe (default: 0.0.0.0)")
    serve.add_argument("--health-port", type=int, default=10251, help="port of the probe; 0 picks a free one (default: 10251)")
    serve.add_argument(
        "--watch-timeout",
        type=int,
        default=300,
        help="seconds a watch stays open before it is renewed from its last version (default: 300)",
    )
    serve.add_argument("--request-timeout", type=float, default=30.0, help="seconds an API request may take (default: 30)")
    serve.add_argument(
        "--retry-interval",
        type=float,
        default=300.0,
        help="seconds after which pods that fit nowhere are tried again anyway (default: 300)",
    )
    serve.add_argument(
        "--backoff-max", type=float, default=60.0, help="longest wait, seconds, before retrying a failed API call (default: 60)"
    )

    plan_cmd = sub.add_parser("plan", help="where each Pending pod of kubectl dumps would go, as a table")
    plan_cmd.add_argument("--nodes", type=Path, required=True, help="the output of kubectl get nodes -o json")
    plan_cmd.add_argument("--pods", type=Path, required=True, help="the output of kubectl get pods -A -o json")
    _scheduler_arguments(plan_cmd, None)
    plan_cmd.add_argument(
        "--explain", metavar="POD", default=None, help="print the full nodes x priorities breakdown of this pod (namespace/name)"
    )
    return parser


def _name(value: str | None) -> str | None:
    return None if value in (None, "None") else value


def _params(args: argparse.Namespace) -> SchedulerParams:
    return scheduler_params(args.mode, args.weights, args.use_default, args.set)


def _check_serve(args: argparse.Namespace) -> None:
    for option, value, low in (
        ("--watch-timeout", args.watch_timeout, 1),
        ("--request-timeout", args.request_timeout, 0.1),
        ("--retry-interval", args.retry_interval, 1),
        ("--backoff-max", args.backoff_max, 0.5),
    ):
        if not math.isfinite(value) or value < low:
            raise ParamError(option, f"{value!r} is out of range; allowed: at least {low:g}")
    if not 0 <= args.health_port <= 65535:
        raise ParamError("--health-port", f"{args.health_port} is out of range; allowed: 0 (any free port) to 65535")


def _api_client(kube_config: str | None):
    """The client for the cluster: a kubeconfig file's current context, or the pod's ServiceAccount."""
    from kubernetes import client, config

    path = None if kube_config is None else Path(kube_config).expanduser()
    if path is not None and not path.is_file():
        raise ParamError("--kube-config", f"{path}: no such file; allowed: a kubeconfig file")
    try:
        if path is not None:
            configuration = client.Configuration()
            config.load_kube_config(config_file=str(path), client_configuration=configuration)
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
    except (config.ConfigException, yaml.YAMLError, ValueError, TypeError, KeyError, AttributeError) as e:
        # the client's loader raises whatever a malformed file makes it raise; one line is all the user needs
        reason = " ".join(str(e).split()) or type(e).__name__
        if path is not None:
            raise ParamError(
                "--kube-config", f"{path}: not a usable kubeconfig ({reason}); allowed: a kubeconfig file with a current context"
            ) from None
        raise ParamError(
            "in-cluster config", f"{reason}; allowed: run in a pod with a ServiceAccount, or pass --kube-config [PATH]"
        ) from None
    return client.ApiClient(configuration)


def _serve(args: argparse.Namespace) -> int:
    from engine.kube.daemon import DaemonOptions, SchedulerDaemon  # the kubernetes client is imported only to serve

    params = _params(args)
    _check_serve(args)
    api_client = _api_client(args.kube_config)
    options = DaemonOptions(
        scheduler_name=_name(args.scheduler_name),
        namespace=_name(args.namespace),
        dry_run=args.dry_run,
        bind_address=args.bind_address,
        health_port=args.health_port,
        watch_timeout=args.watch_timeout,
        request_timeout=args.request_timeout,
        retry_interval=args.retry_interval,
        backoff_max=args.backoff_max,
    )
    try:
        daemon = SchedulerDaemon(api_client, params, options)
    except OSError as e:
        raise ParamError("--health-port", f"cannot listen on {args.bind_address}:{args.health_port} ({e.strerror or e})") from None
    logging.getLogger("engine.kube").info("scheduler: %s", describe(params))

    def on_signal(signum: int, frame: object) -> None:
        logging.getLogger("engine.kube").info("%s: finishing the current binding, then stopping", signal.Signals(signum).name)
        # stop() puts into a queue the interrupted main thread may hold the lock of: call it from another thread
        threading.Thread(target=daemon.stop, name="stop", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        daemon.run()
    finally:
        api_client.close()
    return 0


def _plan(args: argparse.Namespace) -> int:
    params = _params(args)
    result = plan(args.nodes, args.pods, params, _name(args.scheduler_name), _name(args.namespace))
    if args.explain is not None:
        try:
            record, decision = result.decision(args.explain)
        except KeyError as e:
            raise ParamError("--explain", str(e.args[0])) from None
        pod = record.pod
        print(f"{record.key}: {describe(params)}")
        print(f"requests: cpu {pod.cpu_millis}m, memory {pod.memory / 2**20:g}Mi, GPUs {pod.gpus:g}; images: {', '.join(pod.images)}")
        print(f"{'chosen: ' + decision.node_name + ', ' + score_summary(decision) if decision.node_name else failure_message(decision)}")
        if decision.priorities and decision.priorities[0].name:
            print(f"columns: {legend(decision)}; cells: score (raw value); total: sum of score x weight")
        with pd.option_context("display.width", 250, "display.max_columns", None, "display.max_rows", None, "display.max_colwidth", 80):
            table = explain_table(decision)
            width = int(table["reason"].str.len().max() or 0)
            print(table.to_string(formatters={"reason": lambda text: text.ljust(width)}))  # reasons read left to right
        return 0
    table = result.table()
    print(f"plan for {len(table)} Pending pod(s) on {result.nodes} node(s): {describe(params)}")
    if not table.empty:
        print(format_table(table))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return _serve(args) if args.cmd == "serve" else _plan(args)
    except (ParamError, InputError, KubeObjectError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
