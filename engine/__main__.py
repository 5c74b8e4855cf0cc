"""``kibitz-engine`` / ``python -m engine``: the UCI loop, ``bench [depth]``, or the engine host
(``host SOCKET``) and a game's engine forked by it (``connect SOCKET``)."""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if not args:
        # Imported here so `uci` is answered before anything heavy is loaded.
        from engine.uci import main_process

        main_process()
    if args[0] == "bench":
        from engine.bench import DEFAULT_DEPTH, run_bench
        from engine.nnue import NetFileError, net_for
        from engine.params import DEFAULT_EVAL_FILE

        eval_file = DEFAULT_EVAL_FILE  # --evalfile '' benches the hand-written evaluation
        threads = 1
        while len(args) >= 3 and args[-2] in ("--evalfile", "--threads"):
            if args[-2] == "--evalfile":
                eval_file = args[-1].strip()
            elif not args[-1].isdigit() or int(args[-1]) < 1:
                sys.exit(f"kibitz-engine bench: --threads needs a positive integer, "
                         f"got {args[-1]!r}")
            else:
                threads = int(args[-1])
            args = args[:-2]
        net = None
        if eval_file not in ("", "<empty>"):
            try:
                net = net_for(eval_file)
            except NetFileError as exc:
                sys.exit(f"kibitz-engine bench: {exc}")
        if len(args) > 2:
            sys.exit("usage: kibitz-engine bench [depth] [--threads N] [--evalfile NET]")
        try:
            depth = int(args[1]) if len(args) == 2 else DEFAULT_DEPTH
        except ValueError:
            sys.exit(f"kibitz-engine bench: depth must be an integer, got {args[1]!r}")
        if not 1 <= depth <= 64:
            sys.exit(f"kibitz-engine bench: depth must be 1-64, got {depth}")
        run_bench(depth, net=net, threads=threads)
        return
    if args[0] == "host" and len(args) == 4 and args[2] == "--evalfile":
        from engine.host import HostError
        from engine.host import main as host_main

        try:
            host_main(args[1], args[3])
        except HostError as exc:
            sys.exit(f"kibitz-engine host: {exc}")
        return
    if args[0] in ("host", "connect"):
        if len(args) != 2:
            sys.exit(f"usage: kibitz-engine {args[0]} SOCKET"
                     + (" [--evalfile NET]" if args[0] == "host" else ""))
        if args[0] == "host":
            from engine.host import HostError
            from engine.host import main as host_main

            try:
                host_main(args[1])
            except HostError as exc:
                sys.exit(f"kibitz-engine host: {exc}")
            return
        from engine.launcher import main as launcher_main

        sys.exit(launcher_main(args[1]))
    sys.exit("usage: kibitz-engine [bench [depth] [--threads N] [--evalfile NET] | host SOCKET | "
             "connect SOCKET]  "
             f"(unknown argument {args[0]!r})")


if __name__ == "__main__":
    main()
