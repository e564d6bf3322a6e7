"""``make mutate`` rows for the instance's spot-recovery guards (area ``spot-node``): tampered times and a damaged
record for this instance never crash the guard nor move its state aside; a gap is a stop only after a handled
notice; an end before the deadline whose cancel failed does not shut down; a power-off from inside cancels the own
request; only ``None`` means "no request"; the stop wait is monotonic; the disk's pass names the image and tools;
a new instance on the same disk is recorded."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "spot-node"
STATE = "instance/instance_state.py"
DOG = "instance/watchdog.py"
DOG_SPOT = "instance/watchdog_spot.py"
DOG_END = "instance/watchdog_end.py"
REQUEST = "instance/spot_request.py"
DAMAGE = ("tests/instance/test_state_damage.py",)
GAPS = ("tests/instance/test_instance_state.py",)
END = ("tests/instance/test_spot_end_fail_closed.py",)
SAME_DISK = ("tests/instance/test_same_disk_resume.py",)

MUTATIONS = [
    # -- A: times that are not times --
    Mutation(AREA, STATE, "    return found if found is not None and 0.0 <= found <= LATEST_EPOCH else None",
             "    return found", DAMAGE, "a time in a state file past 9999 or before 1970 is treated as unknown"),
    Mutation(AREA, STATE, "    except (OSError, ValueError, OverflowError, TypeError) as exc:  # the guard must start",
             "    except OSError as exc:  # the guard must start", DAMAGE, "claiming the state never raises"),
    Mutation(AREA, "instance/deadline_rule.py", '        kept = st.epoch(self.state.get("deadline"))',
             '        kept = st.number(self.state.get("deadline"))', DAMAGE,
             "a kept deadline that is not a time is not used"),
    # -- B: this instance's damaged record is never another instance's --
    Mutation(AREA, STATE, "        if damage is not None or owner == instance:\n",
             "        if False:\n", DAMAGE, "a damaged record of this instance moves nothing aside"),
    # -- C: a gap is a stop only when one was announced --
    Mutation(AREA, STATE, '        last["lastAlive"] = resumed_at  # the gap counts as running',
             "        pass  # the gap counts as running", GAPS, "a gap with no stop announced counts as running"),
    Mutation(AREA, STATE, '    expected = last.get("stopExpected") if isinstance(last.get("stopExpected"), str) else None',
             '    expected = "reclaim"', GAPS, "a reboot is not recorded as a spot interruption"),
    Mutation(AREA, DOG_SPOT, '            st.expect_stop(self.s["state_dir"], self.claim, f"{cause}: {detail}")',
             "            pass", END, "a handled notice marks the coming stop"),
    # -- D: no shutdown before the deadline while the request is open --
    Mutation(AREA, DOG_END, '            settled = outcome["cancelled"] or outcome["state"] == "none"\n        if hook:',
             "            settled = True\n        if hook:", END, "an end before the deadline whose cancel failed does not shut down"),
    Mutation(AREA, DOG_SPOT, "        if mono < at:\n            return\n", "        pass\n", END,
             "the cancel is retried every spot_cancel_retry, not on every tick"),
    # -- E: a power-off from inside --
    Mutation(AREA, DOG_END, '        if self.shutdown_at is None and self.recover and self.cloud == "aws" and not self.stop_awaited():',
             "        if False:", END, "a power-off from inside cancels the own request before the final sync"),
    Mutation(AREA, REQUEST, "    if power:\n        return True,", "    if False:\n        return True,", END,
             "a power-off (poweroff.target, halt.target queued) is told from a reboot"),
    Mutation(AREA, REQUEST, "    if code != 0:\n        return True,", "    if code != 0:\n        return False,", END,
             "a power-off check that cannot answer cancels the request"),
    # -- F: only None means no request; another id is recorded --
    Mutation(AREA, REQUEST, '        if found in ("None", "null"):', '        if found in ("", "None", "null"):', END,
             "an empty describe answer is not 'no request'"),
    Mutation(AREA, REQUEST, "        if isinstance(known, str) and known != found:", "        if False:", END,
             "a request id other than the recorded one is recorded"),
    # -- G: the stop wait on the monotonic clock --
    Mutation(AREA, DOG, "        if self.awaiting_stop is not None and self.waiting_for_stop(mono):",
             "        if self.awaiting_stop is not None and self.waiting_for_stop(now):", END,
             "the stop wait is timed on the monotonic clock"),
    # -- H, I: the disk's pass and the resumption on a new instance --
    Mutation(AREA, "instance/run_job.py", '"job": job.get("command"), "instanceType": instance_type, "imageId": image_id,',
             '"job": job.get("command"), "instanceType": instance_type,', SAME_DISK,
             "a pass on the disk stands only for the same image"),
    Mutation(AREA, "instance/run_job.py", '             "tools": tools.get("sha256")}', "             }", SAME_DISK,
             "a pass on the disk stands only for the same tools bundle"),
    Mutation(AREA, "instance/run_job.py",
             '            st.record_new_instance(s["state_dir"], claim, earlier, control.now_epoch(), _last_write(s, session))', "            pass",
             SAME_DISK, "a new instance on the same disk is recorded as a resumption"),
]
