#!/bin/bash
bash tools/gpu/hip_gate.sh .dev/gate
