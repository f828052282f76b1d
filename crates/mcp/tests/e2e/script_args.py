"""The command lines of the measuring scripts (`latency.py`, `after_edit.py`):
positional arguments and `--name VALUE` options, then, after `--`, the server's own."""


def split_server_args(argv):
    """(the script's arguments, the server's: what follows `--`)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return list(argv), []


def take_option(args, name, convert, default):
    """The value of `name` in `args`, converted, removed from them; `default` without it."""
    if name not in args:
        return default
    i = args.index(name)
    value = convert(args[i + 1])
    del args[i:i + 2]
    return value
