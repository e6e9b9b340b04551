/**
 * Integration layer: the {@code ferrite} command line (picocli), one class per subcommand, listed
 * in {@link io.ferrite.cli.FerriteCli}.
 */
package io.ferrite.cli;
