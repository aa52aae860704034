/* glassllm replay: a recording dropped anywhere on the player. */

/* Let `root` take a dropped file: it is marked while a file is dragged over it, and
   `onFile(file)` opens the first file dropped. */
export function acceptDrops(root, onFile) {
  for (const type of ["dragenter", "dragover"]) {
    root.addEventListener(type, (ev) => {
      if (!ev.dataTransfer || Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") < 0) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = "copy";
      root.classList.add("gr--dragging");
    });
  }
  root.addEventListener("dragleave", (ev) => {
    if (!root.contains(ev.relatedTarget)) root.classList.remove("gr--dragging");
  });
  root.addEventListener("drop", (ev) => {
    root.classList.remove("gr--dragging");
    if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
    ev.preventDefault();
    onFile(ev.dataTransfer.files[0]);
  });
}
