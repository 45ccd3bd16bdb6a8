# A candidate runtime for rlab's docker sandbox.
#
#   docker build -t rlab-candidate:py311 -f docs/candidate.Dockerfile .
#   rlab run --sandbox docker -o sandbox.image=rlab-candidate:py311
#
# rlab never pulls an image: build this one (or pull its base) where a registry is reachable;
# on an offline machine `docker save` it elsewhere and `docker load` it here. Without
# `sandbox.image`, rlab needs no image at all: it builds an empty one locally and runs this
# machine's own interpreter through read-only mounts (see docs/user-guide.md).
#
# Add what your benchmark's candidates import; the example task needs only numpy. The build
# copies nothing, so any context folder works (`docker build -t NAME - < docs/candidate.Dockerfile`
# sends none).
#
# At run time rlab mounts the candidate's folders under /rlab (work, data read-only, output,
# cache), starts `python main.py` in /rlab/work with the image's PATH and the allow-listed
# environment, as a non-root user (65534, or your own uid; never root), with no network, a
# read-only root file system, a private /tmp and memory, CPU and process limits.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    MPLBACKEND=Agg

# libgomp1: the OpenMP runtime LightGBM and scikit-learn load
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*

RUN pip install \
        "numpy>=1.26" \
        "pandas>=2.1" \
        "scipy>=1.11" \
        "scikit-learn>=1.4" \
        "lightgbm>=4.3" \
        "duckdb>=1.0" \
        "pyarrow>=15"

# the image's own default user is not root either; rlab passes --user explicitly anyway
RUN useradd --uid 10001 --no-create-home --home-dir /rlab/work --shell /usr/sbin/nologin candidate
USER candidate
WORKDIR /rlab/work
