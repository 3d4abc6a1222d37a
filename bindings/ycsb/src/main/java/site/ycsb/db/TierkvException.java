// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

/**
 * A tierkv call failed: {@link #status()} is its TKV_* status (include/tierkv.h) and the message is
 * "call: tkv_strerror (tkv_errmsg)", tierkv's own detailed message of the failure.
 */
public final class TierkvException extends Exception {
  private static final long serialVersionUID = 1L;
  private final int status;

  /** Made by the JNI glue. */
  public TierkvException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The TKV_* status: TKV_INVALID (-1), TKV_IO_ERROR (-2), TKV_CORRUPTION (-3), ... */
  public int status() {
    return status;
  }
}
