/** An image content part as AIPerf sends it in a chat message. */
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string };
}

/** An audio content part as AIPerf sends it in a chat message (`data` is base64, no data-URL prefix). */
export interface AudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: string };
}

/** A non-text content part of a user turn. */
export type MediaPart = ImagePart | AudioPart;
