import type { Deps } from '../../deps';
import { writeGate } from '../../platform/context';
import type { Job } from '../../platform/jobs';
import { uploadWorkerOf } from './offload';
import { resumeUnfinished } from './recording';

// An upload cut off between two of its transactions (a crash, a stop, its worker gone) is finished from where
// it stopped: at start, and then on this job's timer whenever the upload worker has nothing else to do.

/** How often the job looks for an unfinished upload. */
export const UPLOAD_RESUME_INTERVAL_MS = 30_000;

/**
 * Every replica: an upload is finished by the one that takes its lease (service.ts resumeUnfinished), and
 * each of its transactions checks the count it starts from, so two replicas never record a slice twice.
 */
export const uploadResumeJob: Job<Deps> = {
  name: 'upload-resume',
  intervalMs: UPLOAD_RESUME_INTERVAL_MS,
  async tick(deps) {
    if ((await deps.stores.uploads.unfinishedIds({ deps }, 1)).length === 0) return 0;
    const worker = uploadWorkerOf(deps);
    if (worker) return worker.resume();
    // A database in memory has no worker: uploads run in this thread, and so does this.
    return resumeUnfinished(deps, async (fn) => {
      await writeGate(deps).turn();
      return fn();
    });
  },
};
