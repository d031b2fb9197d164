#!/bin/bash
# tools/gpu/device_env.sh - sourced on the device from the repository root (by h200_cards.sh and the
# experiment scripts). The carried folder .dev/shared holds devlibs.tar.xz (the shared libraries the
# harness's binaries need: Debian 12's libyaml, cJSON, libcurl, OpenSSL ...),
# tilelang-0.1.15-site.tar.xz (TileLang and its wheels) and libflashmla.so; h200_cards.sh says how
# each is made. Unpacks both tarballs under /tmp once per machine and exports the environment.
if [ ! -d /tmp/devlibs/lib ]; then
	mkdir -p /tmp/devlibs && tar -xJf .dev/shared/devlibs.tar.xz -C /tmp/devlibs
fi
# (the sparse steps need no TileLang: a call may carry none)
if [ ! -d /tmp/tlsite/tilelang ] && [ -e .dev/shared/tilelang-0.1.15-site.tar.xz ]; then
	mkdir -p /tmp/tlsite && tar -xJf .dev/shared/tilelang-0.1.15-site.tar.xz -C /tmp/tlsite
fi
export LD_LIBRARY_PATH=/tmp/devlibs/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VS_PYTHON=/opt/torch/.venv/bin/python3 PYTHONPATH=/tmp/tlsite PYTHONUNBUFFERED=1
export FLASHMLA_SO=$PWD/.dev/shared/libflashmla.so
