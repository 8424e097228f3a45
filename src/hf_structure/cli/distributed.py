"""`hf-structure parse` in several processes, started by `torchrun` or `accelerate launch` (which set `RANK`,
`WORLD_SIZE`, `LOCAL_RANK` and the rendezvous address): each process parses one contiguous share of the input into
a part file beside `--output`, and the first joins the parts in input order, so that the output is the one a single
process writes. The processes meet through `torch.distributed` on the gloo backend, which every machine has."""

import os
import re
import shutil
from pathlib import Path
from typing import NamedTuple


class Share(NamedTuple):
    rank: int
    processes: int
    units: range  # the input units (lines, or CoNLL-U sentences) this process parses


def process_count() -> int:
    """How many processes the launcher started (1 without one)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def start(total: int) -> Share:
    """Join the other processes and take this one's share of `total` input units."""
    import torch.distributed

    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo")
    rank, processes = torch.distributed.get_rank(), torch.distributed.get_world_size()
    return Share(rank, processes, range(rank * total // processes, (rank + 1) * total // processes))


def local_device() -> str | None:
    """This process's GPU (`cuda:LOCAL_RANK`) where there are GPUs, else None (the pipeline's default)."""
    import torch

    return f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if torch.cuda.is_available() else None


def part_path(output: str, rank: int) -> str:
    return f"{output}.part-{rank}"


def gather(value) -> list:
    """`value` of every process, by rank, in every process; then the processes may part."""
    import torch.distributed

    values = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, value)
    return values


def join_parts(joined_fd: int, output: str, processes: int, sentence_counts: list[int]) -> None:
    """Write the parts of `output` in rank order into `joined_fd` (`output`, open for writing and empty), then remove
    them (a join that fails keeps them all). `sentence_counts`: the sentences each part numbered from 1 in its
    `# sent_id` lines (CoNLL-U of raw text split into sentences; 0 where the numbers are the input's), renumbered to
    run on from the parts before."""
    with open(joined_fd, "wb", closefd=False) as joined:
        offset = 0
        for rank in range(processes):
            part = part_path(output, rank)
            with open(part, "rb") as stream:
                if offset and sentence_counts[rank]:
                    for line in stream:
                        joined.write(_renumbered(line, offset))
                else:
                    shutil.copyfileobj(stream, joined)
            offset += sentence_counts[rank]
    for rank in range(processes):
        Path(part_path(output, rank)).unlink()


def _renumbered(line: bytes, offset: int) -> bytes:
    match = re.fullmatch(rb"# sent_id = (\d+)(\r?\n)", line)
    return b"# sent_id = %d%s" % (int(match[1]) + offset, match[2]) if match else line


def finish() -> None:
    """Part once every process is here. The group is left to end with the process: torch 2.6's
    `destroy_process_group` on gloo can wait for ever in a process whose peer has already ended (seen in about one
    run in five with two processes), and a process that ends while another still works can leave that one waiting
    in its own teardown, hence the barrier."""
    import torch.distributed

    torch.distributed.barrier()
