# Sourced by .ci/oldest-tf and .ci/newest-python: ci_venv NAME PYTHON VENV PIN...
# makes VENV with PYTHON and the PINs (again only when its Python or its pins
# change: a stamp file in the venv says what it was made with), then installs
# this clone's package (editable, [tensorflow-cpu,test]) into it with the
# PINs, so a new test requirement arrives. It installs with uv (from PyPI, put
# beside the machine's `python` when missing): a clean machine's venv, TF and
# the test extra (Beam, Dask, scikit-learn, Playwright, ...) take about 40 s
# with it against about 8 minutes with pip (pip downloads one file at a time
# and backtracks through apache-beam's pins). Without uv (no PyPI), pip.
ci_uv() {
    if python -m uv --version >/dev/null 2>&1 || python -m pip install -qq --disable-pip-version-check uv; then
        echo "python -m uv"
    fi
}

ci_venv() {
    local name="$1" python="$2" venv="$3"
    shift 3
    local pins=("$@") stamp="${venv}/.queue_pipeline-pins" want uv
    want="$("${python}" --version) ${pins[*]}"
    uv="$(ci_uv)"
    if [[ ! -x "${venv}/bin/python" || "$(cat "${stamp}" 2>/dev/null)" != "${want}" ]]; then
        echo "${name}: making ${venv} ($("${python}" --version), ${pins[*]}${uv:+, with uv})"
        rm -rf "${venv}"
        if [[ -n "${uv}" ]]; then
            ${uv} venv -q --seed -p "${python}" "${venv}"
            ${uv} pip install -q -p "${venv}/bin/python" "${pins[@]}" setuptools wheel
        else
            "${python}" -m venv "${venv}"
            "${venv}/bin/python" -m pip install -qq --disable-pip-version-check "${pins[@]}" setuptools wheel
        fi
        echo "${want}" >"${stamp}"
    fi
    if [[ -n "${uv}" ]]; then
        ${uv} pip install -q -p "${venv}/bin/python" --no-build-isolation "${pins[@]}" -e '.[tensorflow-cpu,test]'
    else
        "${venv}/bin/python" -m pip install -qq --disable-pip-version-check --no-build-isolation "${pins[@]}" -e '.[tensorflow-cpu,test]'
    fi
}
