# Sourced by .ci/oldest-tf and .ci/newest-python: find_python X.Y prints the path
# of a working pythonX.Y, from PATH (pyenv's shims may not run it), else pyenv's
# newest X.Y.*; fails naming the version when there is none.
find_python() {
    local candidate
    for candidate in "python$1" $(ls -d "${PYENV_ROOT:-${HOME}/.pyenv}/versions/$1".*/bin/python 2>/dev/null | sort -V -r); do
        if "${candidate}" -c 'import sys; sys.exit(sys.version_info[:2] != tuple(map(int, sys.argv[1].split("."))))' "$1" 2>/dev/null; then
            command -v "${candidate}"
            return
        fi
    done
    echo "no Python $1 found (set the variable naming it)" >&2
    return 1
}
