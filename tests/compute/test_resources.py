"""The hardware grammar: every accepted form, each seed's own examples, and the refusals."""

from __future__ import annotations

import pytest

from x_tui.compute.extensions import (
    AcceleratorChoice,
    AcceleratorRequest,
    CpuRequest,
    ResourceRequest,
)
from x_tui.compute.resources import (
    KINDS,
    ResourceError,
    canonical_kind,
    check_placement,
    parse_accelerator,
    parse_accelerators,
    parse_cpu,
    parse_duration,
    parse_memory,
    read_resources_table,
    request_from_resources,
)
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.records import dump_record, read_record
from x_tui.compute.worker.spec import NAME_PATTERN, Accelerator, Resources

GiB = 1024**3


def choice(kind: str, count: int = 1, *, exact: bool = False, nodes: int = 1) -> AcceleratorChoice:
    return AcceleratorChoice(kind=kind, count=count, exact=exact, nodes=nodes)


# --- accepted forms --------------------------------------------------------------------------

ACCELERATORS = [
    # urun's own examples: parse_gpu_spec("h100:8"), ("h100"), ("a100:4")
    ("h100:8", choice("H100", 8)),
    ("h100", choice("H100")),
    ("a100:4", choice("A100", 4)),
    # any case, the providers' spellings
    ("H100:8", choice("H100", 8)),
    ("a100-80gb:8", choice("A100-80GB", 8)),
    ("l40s", choice("L40S")),
    ("A10g:4", choice("A10G", 4)),
    ("h200:8", choice("H200", 8)),
    ("b200:2", choice("B200", 2)),
    ("t4", choice("T4")),
    ("v100:8", choice("V100", 8)),
    ("tpu-v5e:8", choice("TPU-v5e", 8)),
    ("  L4:2  ", choice("L4", 2)),
    # Nodus / Modal: gpu="H100!" is exactly that kind
    ("H100!", choice("H100", exact=True)),
    ("h100!:8", choice("H100", 8, exact=True)),
    # urun: a count beyond one node's worth spans ceil(count / 8) nodes
    ("H100:16", choice("H100", 16, nodes=2)),
    ("h100:12", choice("H100", 12, nodes=2)),
    ("A100-80GB:32", choice("A100-80GB", 32, nodes=4)),
    ("H100!:24", choice("H100", 24, exact=True, nodes=3)),
    # a TPU count is a slice's size: it never splits into nodes
    ("TPU-v5p:64", choice("TPU-v5p", 64)),
]


@pytest.mark.parametrize(("text", "expected"), ACCELERATORS)
def test_an_accelerator_reads_in_every_accepted_form(
    text: str, expected: AcceleratorChoice
) -> None:
    assert parse_accelerator(text) == expected


def test_per_node_is_the_count_split_over_the_nodes() -> None:
    assert parse_accelerator("H100:16").per_node == 8
    assert parse_accelerator("H100:12").per_node == 6
    assert parse_accelerator("L4:2").per_node == 2


ALTERNATIVES = [
    # Nodus: an ordered list of alternatives, as in a job table
    (["H100:8", "A100-80GB:8"], (choice("H100", 8), choice("A100-80GB", 8))),
    (["h100!:8", "A100-80GB:8"], (choice("H100", 8, exact=True), choice("A100-80GB", 8))),
    (["l4"], (choice("L4"),)),
    # one string, as on the command line: alternatives separated by commas
    ("H100:8,A100-80GB:8", (choice("H100", 8), choice("A100-80GB", 8))),
    ("h100!, a100-80gb", (choice("H100", exact=True), choice("A100-80GB"))),
    ("L4", (choice("L4"),)),
    # fallbacks of one kind at two counts (Modal's gpu=["H100", "A100-80GB:2"])
    (["H100", "A100-80GB:2"], (choice("H100"), choice("A100-80GB", 2))),
    # multi-node alternatives that span the same node count
    ("H100:16,A100-80GB:16", (choice("H100", 16, nodes=2), choice("A100-80GB", 16, nodes=2))),
]


@pytest.mark.parametrize(("value", "expected"), ALTERNATIVES)
def test_alternatives_keep_their_order(
    value: str | list[str], expected: tuple[AcceleratorChoice, ...]
) -> None:
    request = parse_accelerators(value)
    assert request.alternatives == expected
    assert request.first == expected[0]


def test_alternatives_print_back_in_the_command_line_form() -> None:
    request = parse_accelerators(["h100!:8", "a100-80gb:8", "l4"])
    assert str(request) == "H100!:8,A100-80GB:8,L4"
    assert parse_accelerators(str(request)) == request


@pytest.mark.parametrize("kind", KINDS)
def test_every_canonical_kind_is_a_spec_kind_and_found_in_any_case(kind: str) -> None:
    assert NAME_PATTERN.fullmatch(kind)
    assert canonical_kind(kind.lower()) == kind
    assert canonical_kind(kind.upper()) == kind


CPUS = [
    # urun's own examples: parse_cpu_spec("128"), ("8:128"), (64)
    ("128", CpuRequest(per_node=128.0)),
    ("8:128", CpuRequest(per_node=8.0, total=128.0)),
    (64, CpuRequest(per_node=64.0)),
    # substrax: a number of cores, fractional allowed
    (8, CpuRequest(per_node=8.0)),
    (0.5, CpuRequest(per_node=0.5)),
    ("0.25", CpuRequest(per_node=0.25)),
    ("2:2", CpuRequest(per_node=2.0, total=2.0)),
    ("0.5:2", CpuRequest(per_node=0.5, total=2.0)),
]


@pytest.mark.parametrize(("value", "expected"), CPUS)
def test_cpu_reads_in_every_accepted_form(value: float | str, expected: CpuRequest) -> None:
    assert parse_cpu(value) == expected


def test_a_cpu_total_spans_total_over_per_node_machines() -> None:
    assert parse_cpu("8:128").nodes == 16
    assert parse_cpu(8).nodes == 1


MEMORY = [
    # substrax: memory_mib, a number of MiB
    (32768, "memory_mib", 32768),
    # OuterProduct: memory_bytes=16 * 1024**3
    (16 * GiB, "memory_bytes", 16384),
    (17179869184, "memory_bytes", 16384),
    (1, "memory_bytes", 1),  # rounded up: each figure is the least the job gets
    (GiB + 1, "memory_bytes", 1025),
    # Nodus: memory="4Gi", bare numbers are MiB
    ("4Gi", "memory", 4096),
    ("32Gi", "memory", 32768),
    ("32GiB", "memory", 32768),
    ("512MiB", "memory", 512),
    ("512Mi", "memory", 512),
    ("1.5Ti", "memory", 1572864),
    ("1TiB", "memory", 1048576),
    ("4G", "memory", 3815),  # 4 * 10**9 bytes, rounded up to whole MiB
    ("4GB", "memory", 3815),
    ("1000M", "memory", 954),
    ("2048Ki", "memory", 2),
    ("32 gi", "memory", 32768),
    ("1024", "memory", 1024),
    (2048, "memory", 2048),
    (0.5, "memory", 1),
]


@pytest.mark.parametrize(("value", "unit_key", "mib"), MEMORY)
def test_memory_reads_in_every_accepted_form(value: float | str, unit_key: str, mib: int) -> None:
    assert parse_memory(value, unit_key=unit_key) == mib


DURATIONS = [
    # Nodus: timeout="6h" or seconds
    ("6h", 21600.0),
    (1800, 1800.0),
    (90.5, 90.5),
    ("90s", 90.0),
    ("30m", 1800.0),
    ("1h30m", 5400.0),
    ("1h 30m", 5400.0),
    ("1h30m15s", 5415.0),
    ("2d", 172800.0),
    ("1.5h", 5400.0),
    ("6H", 21600.0),
    ("600", 600.0),
    ("0.5", 0.5),
]


@pytest.mark.parametrize(("value", "seconds"), DURATIONS)
def test_a_duration_reads_in_every_accepted_form(value: float | str, seconds: float) -> None:
    assert parse_duration(value) == seconds


# --- refusals --------------------------------------------------------------------------------

ACCELERATOR_FORMS = "is not KIND, KIND:COUNT, KIND! or KIND!:COUNT, such as 'L4', 'H100:8'"

REFUSED: list[tuple[object, str]] = [
    (lambda: parse_accelerator(""), f"accelerator '' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator("L4:"), f"accelerator 'L4:' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator("L4:two"), f"accelerator 'L4:two' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator(":2"), f"accelerator ':2' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator("L 4"), f"accelerator 'L 4' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator("H100:-1"), f"accelerator 'H100:-1' {ACCELERATOR_FORMS}"),
    (lambda: parse_accelerator("H100:8!"), "(the mark goes after the kind: H100!:8)"),
    (lambda: parse_accelerator("H100+"), "accelerator 'H100+': unknown accelerator kind 'H100+'"),
    (
        lambda: parse_accelerator(8),  # type: ignore[arg-type]
        "accelerator 8 is not a string: write KIND, KIND:COUNT",
    ),
    (
        lambda: parse_accelerator("h10:8"),
        "accelerator 'h10:8': unknown accelerator kind 'h10'; did you mean 'H100'? (known: A100",
    ),
    (
        lambda: parse_accelerator("a100-80g:8"),
        "unknown accelerator kind 'a100-80g'; did you mean 'A100-80GB'?",
    ),
    (lambda: parse_accelerator("A100_80GB"), "did you mean 'A100-80GB'?"),
    (lambda: parse_accelerator("banana"), "unknown accelerator kind 'banana' (known: A100-80GB"),
    (
        lambda: parse_accelerator("H100:0"),
        "accelerator 'H100:0': the count must be at least 1, not 0",
    ),
    (
        lambda: parse_accelerator("H100:9"),
        "accelerator 'H100:9': 9 H100 need 2 nodes of at most 8, and 9 does not split evenly"
        " over 2; ask for at most 8, or a multiple of 2 such as H100:16",
    ),
    (lambda: canonical_kind("gtx"), "unknown accelerator kind 'gtx'"),
    (lambda: parse_accelerators([]), "accelerator [] lists no alternatives"),
    (
        lambda: parse_accelerators(["H100:8", 8]),  # type: ignore[list-item]
        "accelerator alternative 8 is not a string",
    ),
    (
        lambda: parse_accelerators({"kind": "L4"}),  # type: ignore[arg-type]
        "accelerator {'kind': 'L4'} is not a string or a list of strings",
    ),
    (lambda: parse_accelerators("H100:8,,L4"), "accelerator 'H100:8,,L4' has an empty alternative"),
    (lambda: parse_accelerators("H100,"), "accelerator 'H100,' has an empty alternative"),
    (lambda: parse_accelerators(["h100", "H100"]), "accelerator 'H100' is listed twice"),
    (
        lambda: parse_accelerators("H100:16,A100-80GB:8"),
        "accelerator alternatives must span the same number of nodes"
        " (H100:16 needs 2, A100-80GB:8 needs 1)",
    ),
    (lambda: parse_accelerators(["L4", "h10"]), "did you mean 'H100'?"),
    (lambda: parse_cpu(0), "cpu 0: a CPU request must be a positive finite number, not 0.0"),
    (lambda: parse_cpu(-2), "cpu -2: a CPU request must be a positive finite number"),
    (lambda: parse_cpu(True), "cpu True is not a number of cores such as 8 or 0.5"),
    (lambda: parse_cpu(float("nan")), "cpu nan: a CPU request must be a positive finite number"),
    (lambda: parse_cpu("eight"), "cpu 'eight' is not a number of cores such as 8 or 0.5, or"),
    (lambda: parse_cpu("8:"), "cpu '8:' is not a number of cores"),
    (lambda: parse_cpu(":128"), "cpu ':128' is not a number of cores"),
    (lambda: parse_cpu("8:128:2"), "cpu '8:128:2' is not a number of cores"),
    (lambda: parse_cpu("8:4"), "cpu '8:4': a CPU total of 4 is not a whole multiple of 8 per node"),
    (lambda: parse_cpu("8:100"), "cpu '8:100': a CPU total of 100 is not a whole multiple of 8"),
    (lambda: parse_cpu(""), "cpu '' is not a number of cores"),
    (
        lambda: parse_memory("32 gigs", unit_key="memory"),
        "memory '32 gigs': unknown unit 'gigs'; write MiB as a number such as 32768, or a size",
    ),
    (lambda: parse_memory("Gi", unit_key="memory"), "memory 'Gi' is not MiB as a number"),
    (lambda: parse_memory("-4Gi", unit_key="memory"), "memory '-4Gi' is not MiB as a number"),
    (lambda: parse_memory("0Gi", unit_key="memory"), "memory '0Gi' is not positive"),
    (lambda: parse_memory(0, unit_key="memory"), "memory 0 is not positive"),
    (lambda: parse_memory(True, unit_key="memory"), "memory True is not MiB as a number"),
    (
        lambda: parse_memory("32Gi", unit_key="memory_mib"),
        "memory_mib '32Gi' is not a positive whole number of MiB (for a size with a unit,"
        " write memory = '32Gi')",
    ),
    (lambda: parse_memory(1.5, unit_key="memory_mib"), "memory_mib 1.5 is not a positive whole"),
    (lambda: parse_memory(0, unit_key="memory_bytes"), "memory_bytes 0 is not a positive whole"),
    (
        lambda: parse_memory("16Gi", unit_key="memory_bytes"),
        "memory_bytes '16Gi' is not a positive whole number of bytes",
    ),
    (lambda: parse_duration("6 hours"), "duration '6 hours' is not seconds such as 1800, or a"),
    (lambda: parse_duration(""), "duration '' is not seconds"),
    (lambda: parse_duration("h"), "duration 'h' is not seconds"),
    (lambda: parse_duration("30m1h"), "duration '30m1h' is not seconds"),
    (lambda: parse_duration("1h1h"), "duration '1h1h' is not seconds"),
    (lambda: parse_duration("30x"), "duration '30x' is not seconds"),
    (lambda: parse_duration("-5m"), "duration '-5m' is not seconds"),
    (lambda: parse_duration("0s"), "duration '0s' is not positive; write seconds such as 1800"),
    (lambda: parse_duration(0), "duration 0 is not positive"),
    (lambda: parse_duration(float("inf")), "duration inf is not positive"),
    (lambda: parse_duration(True), "duration True is not seconds"),
    (lambda: parse_duration([1]), "duration [1] is not seconds"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("call", "message"), REFUSED)
def test_a_refused_value_is_named_with_the_accepted_forms(call: object, message: str) -> None:
    with pytest.raises(ResourceError) as caught:
        call()  # type: ignore[operator]
    assert message in str(caught.value)


def test_there_are_at_least_twenty_refusals() -> None:
    assert len(REFUSED) >= 20


def test_a_refusal_is_a_user_error_and_shows_no_control_characters() -> None:
    with pytest.raises(UserError) as caught:
        parse_accelerator("\x1b[31mH100")
    assert "\x1b" not in str(caught.value)
    assert "\\x1b[31mH100" in str(caught.value)


def test_an_unknown_unit_key_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unit_key must be one of") as caught:
        parse_memory(1, unit_key="ram")
    assert not isinstance(caught.value, UserError)


# --- the whole request -----------------------------------------------------------------------


def test_a_request_becomes_the_substrax_resources_of_its_first_alternative() -> None:
    request = read_resources_table(
        {"accelerator": ["h100!:8", "A100-80GB:8"], "cpu": "8:128", "memory": "32Gi"}
    )
    assert request.to_resources() == Resources(
        accelerator=Accelerator(kind="H100", count=8), cpu=8.0, memory_mib=32768
    )
    assert request.accelerator is not None
    assert [str(item) for item in request.accelerator.alternatives] == ["H100!:8", "A100-80GB:8"]
    assert request.cpu == CpuRequest(per_node=8.0, total=128.0)


def test_the_accelerator_shape_decides_the_node_count_and_a_cpu_only_job_its_cpus() -> None:
    assert read_resources_table({"accelerator": "H100:16", "cpu": 8}).nodes == 2
    assert read_resources_table({"accelerator": "H100:8", "cpu": "8:128"}).nodes == 1
    assert read_resources_table({"cpu": "8:128"}).nodes == 16
    assert read_resources_table({}).nodes == 1


def test_a_request_is_a_record_that_round_trips() -> None:
    request = read_resources_table(
        {"accelerator": "H100!:16,A100-80GB:16", "cpu": "4:8", "memory_bytes": 16 * GiB}
    )
    assert read_record(ResourceRequest, dump_record(request)) == request


def test_a_record_that_does_not_add_up_is_refused_when_read() -> None:
    data = dump_record(parse_accelerators("H100:16"))
    data["alternatives"][0]["nodes"] = 3
    with pytest.raises(ValueError, match="16 accelerators do not split evenly over 3 nodes"):
        read_record(AcceleratorRequest, data)


def test_substrax_resources_read_as_one_alternative_with_the_kind_as_written() -> None:
    resources = Resources(accelerator=Accelerator(kind="my-gpu", count=2), cpu=8.0)
    request = request_from_resources(resources)
    assert request.accelerator == AcceleratorRequest(alternatives=(choice("my-gpu", 2),))
    assert request.to_resources() == resources
    assert (
        request_from_resources(Resources(accelerator=Accelerator(kind="H100", count=16))).nodes == 2
    )


# --- placement -------------------------------------------------------------------------------


def test_a_multi_node_request_is_refused_where_the_backend_places_one_machine() -> None:
    request = read_resources_table({"accelerator": "H100:16"})
    with pytest.raises(ResourceError) as caught:
        check_placement(request, multi_node=False, backend="modal")
    assert str(caught.value).startswith(
        "accelerator 'H100:16' needs 2 nodes, and the modal backend runs a job on one machine"
    )
    check_placement(request, multi_node=True, backend="skypilot")


def test_a_cpu_fleet_is_refused_where_the_backend_places_one_machine() -> None:
    with pytest.raises(ResourceError, match="cpu '8:128' needs 16 nodes, and this backend"):
        check_placement(read_resources_table({"cpu": "8:128"}), multi_node=False)


def test_a_one_node_request_is_placed_anywhere() -> None:
    check_placement(read_resources_table({"accelerator": "H100:8"}), multi_node=False)
    check_placement(ResourceRequest(), multi_node=False)
