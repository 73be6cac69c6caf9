# shellcheck shell=bash
# Sourced by the scripts of deploy/: lets every script take "--flag=value" as well as "--flag value".
#
#   args_normalize "BOOL_FLAG..." "$@"; set -- "${ARGS[@]}"
#
# Rewrites the arguments into ARGS: "--name=value" becomes "--name" "value", except for the flags
# named in the first argument (space-separated, without dashes), which take no value:
# "--keep=true|yes|1" becomes "--keep" and "--keep=false|no|0" is dropped. Everything from a bare
# "--" on is kept as it is (it is passed on to another program). Exits 2 naming the flag when a
# boolean flag gets another value.

args_normalize() {
  local bools=" $1 " arg name value
  shift
  ARGS=()
  while [ $# -gt 0 ]; do
    arg=$1
    shift
    if [ "$arg" = "--" ]; then
      ARGS+=("--" "$@")
      return 0
    fi
    if [[ $arg =~ ^--([A-Za-z0-9_-]+)=(.*)$ ]]; then
      name=${BASH_REMATCH[1]}
      value=${BASH_REMATCH[2]}
      if [[ $bools == *" $name "* ]]; then
        case $value in
          true | yes | 1) ARGS+=("--$name") ;;
          false | no | 0) ;;
          *) echo "$(basename "$0"): --$name takes no value (or true/false), got '$value'" >&2; exit 2 ;;
        esac
      else
        ARGS+=("--$name" "$value")
      fi
    else
      ARGS+=("$arg")
    fi
  done
}
