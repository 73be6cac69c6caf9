"""Shared by the TorchRec peers: the one-rank gloo process group on a free port of 127.0.0.1 that
DistributedModelParallel needs even on one process."""
import os
import socket


def init_one_rank(dist):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    s.close()
    dist.init_process_group("gloo", rank=0, world_size=1)
