"""The peer side of ``faas_throughput.py --faas-sim PATH``: runs in faas-sim's own interpreter (its venv, Python 3.8+).

Not part of scalelab's engine and imports none of it: faas-sim (github.com/edgerun/faas-sim, not installed by
``make``) is found at the path given on the command line. Reads one line per run from stdin, the simulated seconds,
and answers one ``RESULT {json}`` line: CPU and wall seconds of building and running the simulation, and the
invocations it completed. The workload is faas-sim's own "raith21" edge setting at ~1,000 devices, sized like
edge-1000: ``hybridbalanced`` devices (cloud, MEC and edge; x86, arm64, arm32; GPU/TPU accelerators) in the urban
sensing topology, Skippy's default and raith21's predicates, ``ConstantBenchmark('mixed', rps=50)``: resnet50,
mobilenet and speech inference at 50 requests/s each plus resnet50 training and preprocessing (~151 requests/s),
faas-sim's average-requests scaler (its request-count scaler never scales with its defaults, so most requests
would still be queued at the end). Usage: ``python faas_sim_peer.py FAAS_SIM_DIR [DEVICES] [SEED]``.
"""

import json
import logging
import os
import random
import sys
import time


def build_and_run(duration: float, devices: int, seed: int):
    """(faas-sim's Simulation after its run, CPU s, wall s) of one run, construction included."""
    import numpy as np
    from ext.raith21.benchmark.constant import ConstantBenchmark
    from ext.raith21.characterization import get_raith21_function_characterizations
    from ext.raith21.etherdevices import convert_to_ether_nodes
    from ext.raith21.fet import ai_execution_time_distributions
    from ext.raith21.functionsim import AIPythonHTTPSimulatorFactory
    from ext.raith21.generator import generate_devices
    from ext.raith21.generators.hybridbalanced import hybridbalanced_settings
    from ext.raith21.oracles import Raith21FetOracle, Raith21ResourceOracle
    from ext.raith21.predicates import CanRunPred, NodeHasAcceleratorPred, NodeHasFreeGpu, NodeHasFreeTpu
    from ext.raith21.resources import ai_resources_per_node_image
    from ext.raith21.topology import urban_sensing_topology
    from ext.raith21.util import vanilla
    from sim.core import Environment
    from sim.docker import ContainerRegistry
    from sim.faas.system import DefaultFaasSystem
    from sim.faassim import Simulation
    from sim.logging import RuntimeLogger, SimulatedClock
    from sim.metrics import Metrics
    from sim.skippy import SimulationClusterContext
    from skippy.core.scheduler import Scheduler
    from skippy.core.storage import StorageIndex

    np.random.seed(seed)
    random.seed(seed)
    c0, t0 = time.process_time(), time.perf_counter()
    fet = Raith21FetOracle(ai_execution_time_distributions)
    resources = Raith21ResourceOracle(ai_resources_per_node_image)
    nodes = convert_to_ether_nodes(generate_devices(devices, hybridbalanced_settings))
    predicates = list(Scheduler.default_predicates) + [
        CanRunPred(fet, resources),
        NodeHasAcceleratorPred(),
        NodeHasFreeGpu(),
        NodeHasFreeTpu(),
    ]
    storage = StorageIndex()
    env = Environment()
    env.simulator_factory = AIPythonHTTPSimulatorFactory(get_raith21_function_characterizations(resources, fet))
    env.metrics = Metrics(env, log=RuntimeLogger(SimulatedClock(env)))
    env.topology = urban_sensing_topology(nodes, storage)
    env.faas = DefaultFaasSystem(env, scale_by_average_requests=True)
    env.container_registry = ContainerRegistry()
    env.storage_index = storage
    env.cluster = SimulationClusterContext(env)
    env.scheduler = Scheduler(env.cluster, percentage_of_nodes_to_score=100, priorities=vanilla.get_priorities(), predicates=predicates)
    sim = Simulation(env.topology, ConstantBenchmark("mixed", duration=int(duration), rps=50), env=env)
    sim.run()
    return sim, time.process_time() - c0, time.perf_counter() - t0


def main() -> None:
    root = os.path.abspath(sys.argv[1])
    devices = int(sys.argv[2]) if len(sys.argv) > 2 else 1001
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    sys.path.insert(0, root)
    logging.disable(logging.CRITICAL)  # faas-sim logs every step at INFO
    for line in sys.stdin:
        duration = float(line.strip() or 300)
        sim, cpu, wall = build_and_run(duration, devices, seed)
        completed = len(sim.env.metrics.extract_dataframe("invocations"))
        out = {"cpu": cpu, "wall": wall, "completed": completed, "devices": devices, "duration": duration}
        print("RESULT " + json.dumps(out), flush=True)
        del sim


if __name__ == "__main__":
    main()
