#!/usr/bin/env bash
# Takes the README's screenshots of the turn's notification as a desktop shows it
# (docs/screenshots/turn-notification-{en,zh}.png): a virtual X display (Xvfb), a D-Bus session bus and a
# notification daemon (dunst) of its own, then the app's TestTurnNotificationOnTheDesktop, which runs the
# real app and a Chromium with a window (not headless) on that display, lets the turn come while the item's
# tab is in the background, checks that the daemon shows the notification, and takes the whole X screen.
# Installs Debian's xvfb, dbus-x11, dunst, imagemagick and chromium-l10n when missing. Not part of `make test` or CI: a
# desktop is needed for nothing else. Usage: scripts/notification-shot.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-docs/screenshots}")
mkdir -p "$out"

say() { printf 'notification-shot: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for pair in Xvfb:xvfb dbus-launch:dbus-x11 dunst:dunst dunstctl:dunst import:imagemagick; do
  command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
# Chromium's menus in Chinese for the Chinese shot.
[ -e /usr/lib/chromium/locales/zh-CN.pak ] || missing+=(chromium-l10n)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A display number nobody uses.
display=99
while [ -e "/tmp/.X${display}-lock" ] || [ -e "/tmp/.X11-unix/X${display}" ]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1280x800x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${display}" ] && break; sleep 0.1; done
[ -e "/tmp/.X11-unix/X${display}" ] || { cat "$work/xvfb.log" >&2; say "Xvfb did not start"; exit 1; }
export DISPLAY=":$display"

# A session bus of its own: Chromium sends a page's notifications over it (org.freedesktop.Notifications).
eval "$(dbus-launch --sh-syntax)"
pids+=("$DBUS_SESSION_BUS_PID")
export DBUS_SESSION_BUS_ADDRESS

# dunst, as a desktop's daemon draws them: top right, under the browser's toolbar, no (A)/(U) marks.
cat >"$work/dunstrc" <<'CONF'
[global]
    width = 400
    origin = top-right
    offset = 16x96
    font = DejaVu Sans 12
    format = "<b>%s</b>\n%b"
    show_indicators = no
    icon_position = left
    max_icon_size = 48
    padding = 10
    horizontal_padding = 12
    frame_width = 1
    frame_color = "#888888"
    corner_radius = 6
[urgency_normal]
    background = "#2b2b2b"
    foreground = "#ffffff"
    timeout = 30
CONF
dunst -config "$work/dunstrc" >"$work/dunst.log" 2>&1 &
pids+=($!)
# Wait for it by asking the bus who owns the name, not the name itself: a call to the name before dunst
# owns it would have D-Bus start a dunst of its own, with the default look.
owned() {
  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q 'boolean true'
}
for _ in $(seq 50); do owned && break; sleep 0.1; done
owned || { cat "$work/dunst.log" >&2; say "dunst did not start"; exit 1; }

./scripts/services.sh
say "display $DISPLAY, screenshots into $out"
NOTIFICATION_SHOT_DIR="$out" go test -count=1 -timeout 5m -run 'TestTurnNotificationOnTheDesktop' ./app
say "done: $(ls "$out"/turn-notification-*.png | tr '\n' ' ')"
