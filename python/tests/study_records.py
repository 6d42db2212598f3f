"""A study's results.jsonl line for one finished run, as runner.py writes it, for tests that
render reports from hand-made results."""

import json


def run_record(workload: str, params: dict, threads: int, allocator: str, rep: int, result: dict) -> dict:
    return {
        "key": json.dumps([workload, params, threads, allocator, rep]),
        "workload": workload,
        "params": params,
        "threads": threads,
        "allocator": allocator,
        "rep": rep,
        "status": "ok",
        "result": result,
    }
