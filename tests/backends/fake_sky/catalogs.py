"""A few rows of SkyPilot's catalogs (its ``vms.csv`` of AWS and GCP) for the fake SkyPilot."""

from __future__ import annotations

from tests.backends.fake_sky.harness import FakeSky

HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone\n"  # noqa: E501
CATALOGS = {
    "aws": [
        "p5.48xlarge,H100,8.0,192.0,2048.0,,98.32,40.0,us-east-1,us-east-1a",
        "p5.48xlarge,H100,8.0,192.0,2048.0,,112.0,45.0,eu-west-1,eu-west-1a",
        "g5.xlarge,A10G,1.0,4.0,16.0,,1.006,0.4,us-east-1,us-east-1b",
        "m5.large,,,2.0,8.0,,0.096,0.04,us-east-1,us-east-1a",
    ],
    "gcp": [
        "a3-highgpu-8g,H100,8.0,208.0,1872.0,,88.49,30.0,us-central1,us-central1-a",
        "g2-standard-8,L4,1.0,8.0,32.0,,0.85,,us-central1,us-central1-a",
    ],
}


def seed(fake: FakeSky) -> None:
    """Write the catalogs where the fake SkyPilot keeps its catalog cache."""
    for cloud, rows in CATALOGS.items():
        path = fake.root / "catalogs" / "v8" / cloud / "vms.csv"
        path.parent.mkdir(parents=True)
        path.write_text(HEADER + "\n".join(rows) + "\n")
